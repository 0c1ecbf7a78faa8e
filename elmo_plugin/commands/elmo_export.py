"""`allennlp elmo-export`: a trained biLM archive -> bilm-tf `options.json` + `weights.hdf5` + `vocab.txt`."""

import argparse
import logging
import os
import posixpath
import tarfile

from allennlp.commands.subcommand import Subcommand
from allennlp.models.archival import load_archive

from elmo_bilm.formats.bilm_tf import export_bilm_tf
from elmo_bilm.utils.checks import check_output
from elmo_bilm.utils.file_sets import output_set
from elmo_bilm.utils.files import UsageError, reports_errors
from elmo_plugin.common.parsers import COMMANDS
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
from elmo_plugin.lm.vocabulary import write_bilm_tf_vocab

logger = logging.getLogger(__name__)


def export_archive(archive_file: str, output_dir: str) -> None:
    """Write `options.json`, `weights.hdf5` (with the softmax as extra datasets) and `vocab.txt` of
    an `elmo_plugin_bilm` archive into `output_dir` (created if needed; existing files there are
    never overwritten). The archive and the output are checked before the model loads."""
    _check_archive(archive_file)
    _check_free(output_dir)
    model = load_archive(archive_file).model
    if not isinstance(model, BiLmLanguageModel):
        raise UsageError(f"{archive_file}: not an elmo_plugin_bilm archive")
    export_model(model, output_dir)


# What `allennlp train` archives hold, and `load_archive` needs (besides a vocabulary folder)
ARCHIVE_MEMBERS = ("config.json", "weights.th")
# What an export writes
EXPORTED = ("options.json", "weights.hdf5", "vocab.txt")


def _check_archive(archive_file: str) -> None:
    """An AllenNLP model archive (a tar.gz, or its unpacked folder) holding `ARCHIVE_MEMBERS`;
    anything else is one UsageError naming what it holds."""
    if os.path.isdir(archive_file):
        names = set(os.listdir(archive_file))
    elif os.path.isfile(archive_file):
        try:
            with tarfile.open(archive_file, "r:*") as archive:
                names = {posixpath.normpath(name) for name in archive.getnames()}
        except (tarfile.TarError, OSError, EOFError):
            raise UsageError(
                f"{archive_file}: not an AllenNLP model archive (not a readable tar.gz; allennlp "
                "train writes model.tar.gz into its serialization folder)"
            ) from None
    else:
        raise FileNotFoundError(f"{archive_file}: no such file or folder")
    missing = [name for name in ARCHIVE_MEMBERS if name not in names]
    if missing:
        held = ", ".join(sorted(names)[:10]) or "nothing"
        raise UsageError(
            f"{archive_file}: not an AllenNLP model archive: no {' or '.join(missing)} (it holds "
            f"{held}; allennlp train writes model.tar.gz into its serialization folder)"
        )


def _check_free(output_dir: str) -> None:
    """Before any work: none of the three files exists in `output_dir`, which is a folder."""
    check_output(output_dir, overwrite=False, kind="folder")
    existing = [
        os.path.join(output_dir, name)
        for name in EXPORTED
        if os.path.lexists(os.path.join(output_dir, name))
    ]
    if existing:
        raise FileExistsError(f"not overwriting {', '.join(existing)}")


def export_model(model: BiLmLanguageModel, output_dir: str) -> None:
    """`export_archive` for a model in memory. The three files are written as one set
    (`elmo_bilm.utils.file_sets.output_set`: staged in a hidden folder in `output_dir`, moved in
    only when all are complete; a new `output_dir` appears by one rename with the three files in
    it), so an interrupted export leaves nothing that would block a retry, and a killed one's
    staging folder is removed by the next export."""
    names = EXPORTED
    _check_free(output_dir)
    # its parents made; the folder itself appears with the complete set (`output_set`)
    os.makedirs(os.path.dirname(os.path.abspath(output_dir)), exist_ok=True)
    with output_set({name: os.path.join(output_dir, name) for name in names}) as paths:
        vocab = write_bilm_tf_vocab(model.vocab, paths["vocab.txt"], namespace=model.lm_namespace)
        # softmax rows in vocab.txt order (<UNK> = the namespace's OOV row)
        rows = [model.vocab.get_token_index(token, model.lm_namespace) for token in vocab]
        weight, bias = (
            parameter.detach().float().cpu()[rows].numpy()
            for parameter in model.softmax_parameters()
        )
        model.bilm.options["n_tokens_vocab"] = len(vocab)
        export_bilm_tf(
            model.bilm, paths["options.json"], paths["weights.hdf5"], softmax=(weight, bias)
        )


@Subcommand.register("elmo-export")
class ElmoExport(Subcommand):
    """Export a biLM trained with `allennlp train` to the original bilm-tf layout.

    Registered as a `Subcommand` with name "elmo-export".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-export")
def _run(args: argparse.Namespace) -> None:
    export_archive(args.archive_file, args.output_dir)
