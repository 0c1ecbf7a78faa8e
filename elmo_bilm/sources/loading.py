"""The one way the core turns a user's choice of biLM into a `BiLm`, and the command-line options
that choose it (the plugin adds `--archive-file`, AllenNLP archives, on top of both)."""

import argparse
import logging
from typing import Optional

from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.formats.manylangs import is_manylangs_folder, load_manylangs
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.sources.published import resolve
from elmo_bilm.sources.shipped import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE, SHIPPED_DIR

logger = logging.getLogger(__name__)


def load_bilm(
    options_file: Optional[str] = None, weight_file: Optional[str] = None, dropout: float = 0.0
) -> BiLm:
    """bilm-tf `options_file` + `weight_file` (paths, or http(s) URLs downloaded once into the
    cache of `elmo_bilm.sources.published`), a biLM's name as `options_file` alone (AllenNLP's `small`,
    `medium`, `original`, `original_5.5b`; this project's `wikipedia`, `wikipedia_1024`), or
    (neither) the biLM shipped in
    `elmo_bilm/pretrained`; an ELMoForManyLangs model folder as `options_file` alone
    (`elmo_bilm.formats.manylangs`); `dropout` on its LSTM inputs in training mode."""
    options_file, weight_file = options_file or None, weight_file or None  # "": not given
    if options_file is None and weight_file is None:
        logger.info("No biLM given: using the shipped biLM in %s", SHIPPED_DIR)
        options_file, weight_file = str(DEFAULT_OPTIONS_FILE), str(DEFAULT_WEIGHT_FILE)
    if weight_file is None and is_manylangs_folder(options_file):  # ELMoForManyLangs' folder
        return load_manylangs(options_file, dropout)  # type: ignore[arg-type]
    options_file, weight_file = resolve(options_file, weight_file)
    bilm = load_bilm_tf(options_file, weight_file)
    bilm.set_dropout(dropout)
    return bilm


def add_bilm_arguments(parser: argparse.ArgumentParser, batch_size: Optional[int] = None) -> None:
    """`--options-file` and `--weight-file`; with a `batch_size`, also `--batch-size` (that
    default) and `--cuda-device`, for the commands that run the biLM."""
    parser.add_argument(
        "--options-file",
        help="bilm-tf options.json (with --weight-file), a path or URL; or a biLM's name alone: "
        "small, medium, original, original_5.5b (AllenNLP's), wikipedia, wikipedia_1024 "
        "(default: the shipped biLM, wikipedia)",
    )
    parser.add_argument("--weight-file", help="bilm-tf weights.hdf5, a path or URL")
    if batch_size is None:
        return
    parser.add_argument(
        "--batch-size",
        type=int,
        default=batch_size,
        help=f"sentences per biLM batch (length-sorted; default {batch_size}; vectors "
        "equal up to float32 rounding whatever the size, bit for bit for the same size)",
    )
    parser.add_argument("--cuda-device", type=int, default=-1, help="GPU id, -1 for CPU")
