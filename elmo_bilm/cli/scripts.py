"""The installed console scripts' entry points. Each imports its command's module only when run:
a Ctrl-C while it imports (torch takes a second or more) is one line and status 130, as it is
once the command runs (`elmo_bilm.utils.files.reports_errors`), not a traceback."""

import importlib
import sys
from typing import Callable


def _launch(module: str, function: str, prog: str) -> Callable[[], None]:
    """The entry point of the script `prog`: `elmo_bilm.cli.MODULE.FUNCTION`, imported when run."""

    def script() -> None:
        """The installed script: its module imported, then its entry called."""
        try:
            entry = getattr(importlib.import_module(f"elmo_bilm.cli.{module}"), function)
        except KeyboardInterrupt:
            sys.stderr.write(f"{prog}: interrupted (Ctrl-C)\n")
            raise SystemExit(130) from None
        sys.exit(entry())

    return script


embed = _launch("embed", "console", "elmo-embed")
embed_corpus = _launch("embed_corpus", "console", "elmo-embed-corpus")
convert = _launch("convert", "console", "elmo-convert")
export_onnx = _launch("export_onnx", "main", "elmo-export-onnx")
