"""`elmo-embed`: write the biLM layers of every sentence of a text file to HDF5, with the
arguments and the file layout of AllenNLP 0.9's `allennlp elmo` (`elmo_bilm.runtime.engine` does the
work). Needs only torch, h5py and numpy (no AllenNLP), so it starts in a second or two;
`allennlp elmo-embed` runs the same code.
"""

import argparse
import logging
import os
import sys
from typing import Optional, Sequence

from elmo_bilm.cli.arguments import CommandParser, add_bilm_arguments, add_version_argument
from elmo_bilm.formats.sink import REDUCTIONS
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.runtime.engine import (
    BULK_BATCH_SIZE,
    FORMATS,
    embed_fasta,
    embed_file,
    is_fasta,
)
from elmo_bilm.runtime.layers import LAYER_CHOICES, Layers
from elmo_bilm.runtime.precision import add_precision_argument, set_precision
from elmo_bilm.sources.published import seqvec_files
from elmo_bilm.sources.resolver import load_bilm
from elmo_bilm.utils.checks import check_output, count_argument, number_argument
from elmo_bilm.utils.files import UsageError, reports_errors

logger = logging.getLogger(__name__)

DESCRIPTION = (
    "Write the ELMo biLM layers of every line of INPUT (one whitespace-tokenised sentence per line) "
    "to OUTPUT.hdf5 in the layout of AllenNLP 0.9's `allennlp elmo` (same arguments): one float32 "
    "dataset per line named by its 0-based line number, shape (n_layers, n_tokens, dim) with "
    "--all, (n_tokens, dim) with --top or --average, and 'sentence_to_index', a (1,) string "
    "dataset holding the JSON of {sentence: its line's name}. With --format parquet, one row per "
    "sentence instead (file, line, tokens, embeddings; read back with elmo_bilm.read_embeddings): "
    "'line' is the 1-based line number (the HDF5 name is line - 1), rows in length-sorted order "
    "within a chunk (sort by line for file order). With --reduce, one vector per line (or "
    "protein) instead of one per token: (dim,) with --top, --average or --mix, (n_layers, dim) "
    "with --all. An empty or non-UTF-8 line stops the run "
    "before any work, naming FILE:LINE; --skip-bad-lines leaves such lines out (the others keep "
    "their numbers). "
    "A FASTA INPUT (.fasta, .fa, .faa, or --fasta) is proteins: each residue a token, one dataset "
    "per record named by its id, embedded with SeqVec (bio_embeddings' protein biLM, from its "
    "cache or downloaded once) unless a biLM is named. Stateless: every sentence starts from zero LSTM states, so it "
    "gets the same vectors in any batch (AllenNLP 0.9's command carried the states from batch to "
    "batch; ElmoEmbedder(...).embed_file does, as 0.9's)."
)
# the same vectors for any --batch-size / --chunk-size up to float32 rounding (another batch
# sums the matrix products in another order), bit for bit for the same sizes on one machine
SIZES_HELP = "equal up to float32 rounding whatever the size; bit for bit for the same size"


def add_layer_arguments(parser: argparse.ArgumentParser) -> None:
    """What to keep of the biLM's layers (--all / --top / --average / --layers / --mix with
    --gamma) and their type on disk (--dtype); `elmo-embed` and `elmo-embed-corpus` share them."""
    layers = parser.add_mutually_exclusive_group()
    for choice, text in zip(
        LAYER_CHOICES, ("every layer (the default)", "the top layer", "the layers' average")
    ):
        layers.add_argument(
            f"--{choice}", dest="layers", action="store_const", const=choice, help=text
        )
    layers.add_argument("--layers", choices=LAYER_CHOICES, help="the same, as one option")
    layers.add_argument(
        "--mix",
        type=number_argument(),
        nargs="+",
        metavar="W",
        help="a fixed Eq. (1) mix: one weight per biLM layer, gamma * sum_j softmax(W)_j * h_j",
    )
    parser.add_argument(
        "--gamma", type=number_argument(), default=1.0, help="gamma of --mix (default 1)"
    )
    parser.add_argument(
        "--dtype",
        choices=("float32", "float16"),
        default="float32",
        help="the vectors' type on disk (float16: half the size)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of `elmo-embed` (the console script and the `allennlp` subcommand): AllenNLP
    0.9's `allennlp elmo` arguments, plus --overwrite and --chunk-size."""
    parser.add_argument("input_file", help="text file, one tokenised sentence per line")
    parser.add_argument("output_file", help="HDF5 file to write")
    add_layer_arguments(parser)
    parser.add_argument(
        "--format", choices=FORMATS, default="hdf5", help="hdf5 (allennlp elmo's) or parquet"
    )
    add_bilm_arguments(parser, BULK_BATCH_SIZE)
    add_precision_argument(parser)
    parser.add_argument(
        "--reduce",
        choices=REDUCTIONS,
        help="one vector per line or protein: mean, the mean over its tokens of the layers kept "
        "(bio_embeddings' reduce_per_protein: --mix 0 0 0 --gamma 3 --reduce mean); unit-mean, "
        "that mean scaled to unit length (simple_elmo's get_elmo_vector_average)",
    )
    parser.add_argument(
        "--forget-sentences",
        action="store_true",
        help="write no 'sentence_to_index' dataset (memory then stays flat however long INPUT is)",
    )
    parser.add_argument(
        "--use-sentence-keys",
        action="store_true",
        help="name each dataset by its sentence (the stripped line) instead of its line number; "
        "a repeated sentence is an error",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="leave out empty or non-UTF-8 lines instead of stopping at the first (the other "
        "lines keep their line numbers as names; as elmo-embed-corpus's flag)",
    )
    parser.add_argument(
        "--fasta",
        action="store_true",
        help="read INPUT as FASTA (automatic for .fasta/.fa/.faa): each residue a token, one "
        "dataset per record named by its id, batched by --max-tokens residues",
    )
    parser.add_argument(
        "--chunk-size",
        type=count_argument(),
        default=10_000,
        help=f"sentences read and length-sorted at a time (bounds memory; vectors {SIZES_HELP})",
    )
    return parser


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless one: "1 sentence", "3 sentences"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def layers_of(args: argparse.Namespace) -> Layers:
    """The `Layers` that --all / --top / --average / --layers / --mix / --gamma ask for."""
    return Layers(args.layers or "all", tuple(args.mix) if args.mix else None, args.gamma)


def is_fasta_input(args: argparse.Namespace) -> bool:
    """Whether INPUT is read as FASTA (proteins): --fasta, or a FASTA file name."""
    return bool(getattr(args, "fasta", False)) or is_fasta(args.input_file)


def takes_seqvec(args: argparse.Namespace) -> bool:
    """Whether the arguments embed with SeqVec: a FASTA input and no biLM named (no options,
    weights or archive file). The shipped biLM is English words; proteins never get it unasked
    (`--options-file wikipedia` still names it)."""
    named = (args.options_file, args.weight_file, getattr(args, "archive_file", None))
    return is_fasta_input(args) and all(name is None for name in named)


def load_seqvec() -> BiLm:
    """SeqVec, found as `SeqVecEmbedder()` finds it (`published.seqvec_files`); offline, one line
    naming both files and where to put them."""
    files = seqvec_files(
        "a FASTA input with no --options-file",
        "name a biLM with --options-file (a SeqVec folder; wikipedia for the shipped English one)",
    )
    return load_bilm(*files)


def run(args: argparse.Namespace, bilm: Optional[BiLm] = None) -> None:
    """Embed as the parsed arguments say, with `bilm` or the one they name (SeqVec for a FASTA
    input that names none: `takes_seqvec`)."""
    precision = getattr(args, "precision", "float32")
    if precision == "int8" and args.cuda_device >= 0:
        raise UsageError("--precision int8 runs on the CPU; leave out --cuda-device")
    fasta = is_fasta_input(args)
    if fasta and (args.format != "hdf5" or args.use_sentence_keys):
        raise UsageError("FASTA input is written to HDF5, each dataset named by its record's id")
    check_output(args.output_file, args.overwrite, flag="--overwrite")  # before the biLM loads
    if bilm is None:
        bilm = (
            load_seqvec() if takes_seqvec(args) else load_bilm(args.options_file, args.weight_file)
        )
    set_precision(bilm, precision)
    if fasta:
        count = embed_fasta(
            bilm,
            args.input_file,
            args.output_file,
            batch_size=args.batch_size,
            layers=layers_of(args),
            cuda_device=args.cuda_device,
            overwrite=args.overwrite,
            max_tokens=args.max_tokens,
            chunk_size=args.chunk_size,
            dtype=args.dtype,
            reduce=getattr(args, "reduce", None),
        )
        logger.info("Wrote %s to %s", counted(count, "protein"), args.output_file)
        return
    count = embed_file(
        bilm,
        args.input_file,
        args.output_file,
        layers=layers_of(args),
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        cuda_device=args.cuda_device,
        overwrite=args.overwrite,
        chunk_size=args.chunk_size,
        sentence_index=not args.forget_sentences,
        sentence_keys=args.use_sentence_keys,
        output_format=args.format,
        dtype=args.dtype,
        skip_bad_lines=getattr(args, "skip_bad_lines", False),
        reduce=getattr(args, "reduce", None),
    )
    logger.info("Wrote %s to %s", counted(count, "sentence"), args.output_file)


@reports_errors("elmo-embed", returns=True)
def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-embed` console script."""
    parser = add_arguments(CommandParser(prog="elmo-embed", description=DESCRIPTION))
    # `--include-package elmo_plugin` is accepted, so that a command line of `allennlp elmo-embed`
    # runs unchanged here; any other package is refused: this command imports none (no AllenNLP)
    parser.add_argument("--include-package", action="append", default=[], help=argparse.SUPPRESS)
    add_version_argument(parser)
    args = parser.parse_args(argv)
    others = [name for name in args.include_package if name != "elmo_plugin"]
    if others:
        print(
            f"elmo-embed: error: --include-package {others[0]}: elmo-embed imports no package "
            "(it needs no plugin); drop the option, or use `elmo-plugin elmo-embed` with it",
            file=sys.stderr,
        )
        return 1
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    run(args)
    return 0


def console() -> None:
    """The installed `elmo-embed` script: `main`, then exit without the interpreter's teardown of
    torch's modules (0.5 s here, a tenth of a short run). By then the output is closed and renamed
    and the logs flushed, so nothing is lost."""
    status = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
