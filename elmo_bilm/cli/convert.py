"""The `elmo-convert` command: any biLM source as bilm-tf `options.json` + `weights.hdf5`
(a TensorFlow checkpoint through `elmo_bilm.formats.convert`; names, URLs, archives, `hf://` fetched)."""

import logging
import os
import shutil
import sys
from typing import Dict, Optional, Sequence

from elmo_bilm.cli.arguments import CommandParser, add_version_argument
from elmo_bilm.formats.bilm_tf import read_options
from elmo_bilm.formats.convert import convert_checkpoint
from elmo_bilm.sources.archives import is_bilm_archive
from elmo_bilm.sources.resolver import ResolvedBilm, names_whole_bilm, resolve_bilm
from elmo_bilm.utils.checks import check_output
from elmo_bilm.utils.file_sets import output_set
from elmo_bilm.utils.files import PathLike, UsageError, reports_errors

logger = logging.getLogger(__name__)


def convert_source(
    source: ResolvedBilm, out_dir: PathLike, overwrite: bool = False
) -> Dict[str, str]:
    """A resolved biLM that is not a TensorFlow checkpoint (a name, a URL, an archive,
    `hf://ORG/REPO`, a folder or files) as `out_dir/options.json` + `weights.hdf5`, the files as
    published (downloaded or unpacked first). An ELMoForManyLangs model is refused: its
    character vocabulary (characters, not UTF-8 bytes) and word embedding have no place in
    bilm-tf's format; `load_bilm` reads the folder itself."""
    files = source.as_bilm_tf()
    out_dir = os.fspath(out_dir)
    paths = {
        "options": os.path.join(out_dir, "options.json"),
        "weights": os.path.join(out_dir, "weights.hdf5"),
    }
    for path in paths.values():
        if os.path.lexists(path) and not overwrite:  # a dangling link too, before the copy
            link = " (a link to nowhere)" if not os.path.exists(path) else ""
            raise FileExistsError(
                f"{path} exists{link}; not overwriting it (--overwrite replaces it)"
            )
    read_options(str(files.options_file))  # a readable bilm-tf options file, or one line naming it
    # its parents made; the folder itself appears with the complete pair (`output_set`)
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    with output_set(paths, overwrite) as staged:  # both or neither: the old pair kept on failure
        shutil.copyfile(str(files.options_file), staged["options"])
        shutil.copyfile(str(files.weight_file), staged["weights"])
    return paths


@reports_errors("elmo-convert")
def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-convert` console script."""
    parser = CommandParser(
        prog="elmo-convert",
        description="Write a biLM as bilm-tf options.json + weights.hdf5. A bilm-tf TensorFlow "
        "checkpoint (model.ckpt-N.index + .data-*, or the folder training wrote, its "
        "`checkpoint` file naming the latest) is converted as bilm-tf's dump_weights would, "
        "plus softmax.hdf5 (the softmax, for fine-tuning), without TensorFlow; any other source "
        "a biLM can be named by (a name, a URL, a .zip / .tar.gz, hf://ORG/REPO) is fetched and "
        "its files written.",
    )
    parser.add_argument(
        "checkpoint",
        metavar="source",
        help="a checkpoint prefix (.../model.ckpt-N) or its folder; or a biLM name, URL, "
        "archive or hf://ORG/REPO",
    )
    parser.add_argument("out_dir", help="the folder to write (created if missing)")
    parser.add_argument(
        "--options-file",
        help="bilm-tf's options.json for this model (default: the one beside the checkpoint)",
    )
    parser.add_argument(
        "--softmax-in-weights",
        action="store_true",
        help="also put softmax/W, softmax/b into weights.hdf5 (for the plugin's biLM "
        "fine-tuning, with the training vocab.txt; bilm-tf and AllenNLP ignore them)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    add_version_argument(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    flags = args.options_file or args.softmax_in_weights
    if flags and names_whole_bilm(args.checkpoint) and not is_bilm_archive(args.checkpoint):
        raise UsageError("--options-file and --softmax-in-weights are for TensorFlow checkpoints")
    if not args.out_dir:  # was os.makedirs' "[Errno 2] ... ''", after the biLM was resolved
        raise UsageError("no output folder named (an empty path); name the folder to write")
    if os.path.islink(args.out_dir) and not os.path.exists(args.out_dir):
        raise UsageError(f"{args.out_dir}: a link to nowhere; name the folder to write")
    # before a biLM is resolved (a download, an unpacking); was "[Errno 17] File exists"
    check_output(args.out_dir, args.overwrite, kind="folder")
    source = resolve_bilm(args.checkpoint)
    if source.format == "tf_checkpoint":
        paths = convert_checkpoint(
            str(source.checkpoint),
            args.out_dir,
            args.options_file or source.options_file,
            args.overwrite,
            softmax_in_weights=args.softmax_in_weights,
        )
    elif flags:
        raise UsageError("--options-file and --softmax-in-weights are for TensorFlow checkpoints")
    else:
        paths = convert_source(source, args.out_dir, args.overwrite)
    for path in paths.values():
        logger.info("Wrote %s", path)
    return 0


def console() -> None:
    """The installed `elmo-convert` script."""
    sys.exit(main())


if __name__ == "__main__":
    console()
