"""The `elmo-embed-corpus` console script: its options, parsed into a `CorpusOptions`, and the
run (`elmo_bilm.integrations.corpus.embed_corpus`)."""

import argparse
import json
import logging
import sys
from typing import Optional, Sequence

from elmo_bilm.cli.arguments import (
    CommandParser,
    add_batch_arguments,
    add_bilm_arguments,
    add_version_argument,
)
from elmo_bilm.cli.embed import add_layer_arguments, layers_of
from elmo_bilm.integrations import corpus
from elmo_bilm.integrations.corpus import CorpusOptions, embed_corpus
from elmo_bilm.integrations.ray_noise import filtered_stderr
from elmo_bilm.runtime.engine import BULK_BATCH_SIZE
from elmo_bilm.runtime.precision import add_precision_argument
from elmo_bilm.utils.checks import count_argument, number_argument
from elmo_bilm.utils.files import reports_errors

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The command's arguments: the inputs, the output folder and `CorpusOptions`' fields."""
    parser.add_argument("inputs", nargs="+", help="text files, folders or globs (or URIs)")
    parser.add_argument("output_dir", help="folder of Parquet shards (or a URI)")
    add_layer_arguments(parser)
    add_bilm_arguments(parser)
    add_precision_argument(parser)
    add_batch_arguments(parser, BULK_BATCH_SIZE)
    parser.add_argument(
        "--shard-lines", type=count_argument(), default=1000, help="lines per Parquet shard"
    )
    parser.add_argument(
        "--num-workers", type=count_argument(), default=1, help="biLM actors (default 1)"
    )
    parser.add_argument(
        "--cpus-per-worker", type=count_argument(), default=1, help="CPU threads per actor"
    )
    parser.add_argument(
        "--gpus-per-worker", type=number_argument(minimum=0.0), default=0.0, help="e.g. 1, or 0.5"
    )
    parser.add_argument(
        "--address", help="a Ray cluster's address (default: a local Ray on this machine)"
    )
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="skip (and count) empty or non-UTF-8 lines instead of stopping at the first",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start over: delete an earlier run's shards, manifest and summary in output_dir",
    )
    return parser


def options_of(args: argparse.Namespace) -> CorpusOptions:
    """The `CorpusOptions` the parsed arguments ask for."""
    return CorpusOptions(
        options_file=args.options_file,
        weight_file=args.weight_file,
        layers=layers_of(args),
        dtype=args.dtype,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        shard_lines=args.shard_lines,
        num_workers=args.num_workers,
        cpus_per_worker=args.cpus_per_worker,
        gpus_per_worker=args.gpus_per_worker,
        address=args.address,
        skip_bad_lines=args.skip_bad_lines,
        precision=args.precision,
        overwrite=args.overwrite,
    )


@filtered_stderr()  # Ray's start-up noise off stderr (elmo_bilm.integrations.ray_noise)
@reports_errors("elmo-embed-corpus", also=(ImportError,), returns=True)
def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-embed-corpus` console script."""
    description = (corpus.__doc__ or "").split("\n\n")[0].strip("`")
    parser = add_arguments(CommandParser(prog="elmo-embed-corpus", description=description))
    add_version_argument(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    summary = embed_corpus(args.inputs, args.output_dir, options_of(args))
    logger.info("%s", json.dumps(summary))
    return 0


def console() -> None:
    """The `elmo-embed-corpus` console script: `main` on `sys.argv`, its status as the exit code."""
    sys.exit(main())


if __name__ == "__main__":
    console()
