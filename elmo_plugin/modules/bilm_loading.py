"""One place that turns the user's choice of biLM (bilm-tf files, URLs or a published name, a
plugin archive, or nothing: the shipped biLM) into a `BiLm`; the ELMo components and the biLM
language model both use it (the core's `elmo_bilm.sources.resolver.load_bilm` without archives)."""

import argparse
from typing import Any, Optional

from elmo_bilm.cli.arguments import add_bilm_arguments as core_add_bilm_arguments
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.sources.archives import checked_members
from elmo_bilm.sources.resolver import load_bilm as core_load_bilm
from elmo_bilm.utils.files import FormatError, UsageError


def check_archive(archive_file: str) -> None:
    """Read `archive_file` through once (a few seconds for the largest here) so that a truncated
    or foreign file is one error naming it, before AllenNLP extracts it into a temporary folder
    (which an `EOFError` midway left behind); a member that could write outside the extraction
    folder is refused, naming it (`elmo_bilm.sources.archives`)."""
    names = [member.name for member in checked_members(archive_file)]
    if not any(name.endswith("config.json") for name in names):
        raise FormatError(f"{archive_file}: no config.json inside; not an AllenNLP archive")


def load_bilm_archive(archive_file: str) -> Any:
    """The `elmo_plugin_bilm` model inside a `model.tar.gz` (its biLM, softmax and vocabulary)."""
    from allennlp.models.archival import load_archive

    check_archive(archive_file)
    model = load_archive(archive_file).model
    if not isinstance(getattr(model, "bilm", None), BiLm):
        raise UsageError(f"{archive_file}: not an elmo_plugin_bilm archive (no biLM inside)")
    return model


def load_bilm_or_archive(
    options_file: Optional[str] = None,
    weight_file: Optional[str] = None,
    archive_file: Optional[str] = None,
    dropout: float = 0.0,
) -> BiLm:
    """An `elmo_plugin_bilm` `model.tar.gz`, or else the core's `load_bilm` (bilm-tf files, or
    the shipped biLM); with `dropout` on its LSTM inputs in training mode (whatever the source
    was trained with)."""
    if archive_file is None:
        return core_load_bilm(options_file, weight_file, dropout)
    if options_file is not None or weight_file is not None:
        raise UsageError("give either archive_file or options_file + weight_file, not both")
    bilm = load_bilm_archive(archive_file).bilm
    bilm.set_dropout(dropout)
    return bilm


def add_bilm_arguments(parser: argparse.ArgumentParser, batch_size: int) -> None:
    """The core's biLM options plus `--archive-file`."""
    core_add_bilm_arguments(parser, batch_size)
    parser.add_argument(
        "--archive-file", help="an elmo_plugin_bilm model.tar.gz; none: the shipped biLM"
    )
