"""Argument helpers the console scripts share: the biLM, batch and precision flags."""

import argparse
from typing import NoReturn, Optional

from elmo_bilm import __version__
from elmo_bilm.runtime.engine import DEFAULT_MAX_TOKENS
from elmo_bilm.utils.checks import count_argument
from elmo_bilm.utils.devices import device_argument


class CommandParser(argparse.ArgumentParser):
    """The console scripts' parser: a bad argument is one line, `PROG: error: MESSAGE (see PROG
    --help)`, exit status 2 as argparse's (argparse printed its usage first: 14 lines for
    `elmo-embed-corpus --max-tokens 0`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_version_argument(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--version`: the script's name and the installed elmo-bilm's version, for bug reports."""
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def add_bilm_arguments(parser: argparse.ArgumentParser, batch_size: Optional[int] = None) -> None:
    """`--options-file` and `--weight-file`; with a `batch_size`, also `--batch-size` (that
    default), `--max-tokens` and `--cuda-device`, for the commands that run the biLM."""
    parser.add_argument(
        "--options-file",
        help="the biLM: a bilm-tf options.json (with --weight-file), a path or URL; or alone a "
        "biLM's name (small, medium, original, original_5.5b: AllenNLP's; wikipedia, "
        "wikipedia_1024, wikipedia_1024_256), hf://ORG/REPO, a .zip / .tar.gz, a folder (bilm-tf "
        "files, ELMoForManyLangs, a TensorFlow checkpoint) or a checkpoint prefix "
        "(default: the shipped biLM, wikipedia; for a FASTA input, SeqVec)",
    )
    parser.add_argument("--weight-file", help="bilm-tf weights.hdf5, a path or URL")
    if batch_size is None:
        return
    add_batch_arguments(parser, batch_size)
    parser.add_argument(
        "--cuda-device",
        type=device_argument,
        default=-1,
        help="the device, as the API takes it: a GPU id (-1 the CPU), cpu, cuda or cuda:N",
    )


def add_batch_arguments(parser: argparse.ArgumentParser, batch_size: int) -> None:
    """`--batch-size` (default `batch_size`) and `--max-tokens`: how the engine batches."""
    parser.add_argument(
        "--batch-size",
        type=count_argument(),
        default=batch_size,
        help=f"sentences per biLM batch (length-sorted; default {batch_size}; vectors "
        "equal up to float32 rounding whatever the size, bit for bit for the same size)",
    )
    parser.add_argument(
        "--max-tokens",
        type=count_argument(),
        default=DEFAULT_MAX_TOKENS,
        help="padded tokens (sentences x the longest) per biLM batch, bounding memory whatever "
        f"the lengths; a longer sentence makes a batch of its own (default {DEFAULT_MAX_TOKENS})",
    )
