"""The `elmo-export-onnx` console script: a biLM, named as anywhere, to ONNX
(`elmo_bilm.runtime.onnx`)."""

import logging
import sys
from typing import Optional, Sequence

from elmo_bilm.cli.arguments import CommandParser, add_bilm_arguments, add_version_argument
from elmo_bilm.runtime.onnx import QUANTIZE_CHOICES, export_onnx
from elmo_bilm.sources.resolver import load_bilm
from elmo_bilm.utils.checks import check_output
from elmo_bilm.utils.files import reports_errors

logger = logging.getLogger(__name__)


@reports_errors("elmo-export-onnx", also=(ModuleNotFoundError,), returns=True)
def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-export-onnx` console script."""
    parser = CommandParser(
        prog="elmo-export-onnx",
        description="Export a biLM (bilm-tf files, or the shipped one) to ONNX: character ids "
        "(batch, tokens, 50) in, every layer out; run it with onnxruntime.",
    )
    parser.add_argument("output_file", help="the .onnx file to write")
    add_bilm_arguments(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    parser.add_argument(
        "--quantize",
        choices=QUANTIZE_CHOICES,
        help="int8: onnxruntime's dynamic quantization of the products (docs/performance.md)",
    )
    add_version_argument(parser)
    args = parser.parse_args(argv)
    # this package's messages; not the ONNX optimiser's (a line per folded constant)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("elmo_bilm").setLevel(logging.INFO)
    check_output(
        args.output_file, args.overwrite, flag="--overwrite"
    )  # before a load and an export of minutes
    export_onnx(
        load_bilm(args.options_file, args.weight_file),
        args.output_file,
        args.overwrite,
        args.quantize,
    )
    logger.info("Wrote %s", args.output_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
