"""The one way the commands make a progress bar: tqdm on stderr, redrawn in place on a terminal
and written as plain lines elsewhere (a log file, a pipe, a job scheduler's output), where a
redraw's carriage returns and cursor moves (`ESC[A`) would pile up as noise."""

import sys
from typing import Any, Optional, TextIO

from tqdm import tqdm

# seconds between a bar's lines when not on a terminal: a log gets a line a minute, not ten a
# second (a terminal's bar is redrawn at tqdm's default, 0.1 s)
PLAIN_INTERVAL = 60.0


class PlainLines:
    """A text stream for a bar not on a terminal: each redraw of the bar one line, without the
    carriage returns and cursor moves; an empty redraw (a bar cleared) writes nothing."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write `text`'s bar, if any, as one line."""
        line = text.replace("\x1b[A", "").replace("\r", "").strip("\n").rstrip()
        if line:
            self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        """Flush the stream beneath."""
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def on_terminal(stream: Any) -> bool:
    """Whether `stream` is a terminal (False for a closed or detached one)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def progress_bar(*args: Any, file: Optional[TextIO] = None, **kwargs: Any) -> tqdm:
    """`tqdm(*args, **kwargs)` on `file` (stderr by default): redrawn on a terminal, plain lines
    (one a `PLAIN_INTERVAL`, and the last) elsewhere."""
    stream = sys.stderr if file is None else file
    if on_terminal(stream):
        return tqdm(*args, file=stream, **kwargs)
    kwargs.setdefault("mininterval", PLAIN_INTERVAL)
    kwargs.pop("position", None)  # lines follow one another: no bar is redrawn above another
    return tqdm(*args, file=PlainLines(stream), **kwargs)
