"""Ray's start-up noise kept off `elmo-embed-corpus`'s stderr; everything else passes unchanged.

What Ray 2.60 prints on every run of the command that says nothing about the run (each matched
by its own text, so that Ray's other warnings and errors, and the workers' output, stay):

- `WARNING authentication_token_setup.py:85 -- Token authentication is enabled for this Ray
  cluster. Set RAY_AUTH_MODE=disabled to opt out. ...`: every local start
  (`ray._private.authentication`); the opposite warning, auth *disabled*, stays;
- `[... E ...] core_worker.cc:NNNN: Actor with class name: 'MapWorker(...)' ... has constructor
  arguments in the object store and max_restarts > 0. ...`: written by Ray's C++ core worker in
  this process straight to file descriptor 2, for every Ray Data actor pool (Ray Data always
  passes its context by reference and restarts actors; ray-project/ray#53727);
- Ray Data's INFO lines `Starting execution of Dataset ...`, `Execution plan of Dataset ...`,
  `Dataset ... execution finished in ...` (also in the session's `logs/ray-data/ray-data.log`);
- Ray Data's `Progress bars disabled. ...` (the command shows its own bar instead).

The C++ line never passes through Python's `sys.stderr`, so `filtered_stderr` filters file
descriptor 2 itself (a pipe read by a thread that writes each line on, less these) besides
`sys.stderr` (Ray's log handlers look it up at each record).
"""

import contextlib
import os
import re
import sys
import threading
from typing import Any, Iterator, List, Pattern, Sequence

_TIME = rb"\d{4}-\d\d-\d\d [\d:,.]+\s+"  # Ray's Python log lines: `2026-11-27 07:04:32,889\t`
NOISE: List[Pattern[bytes]] = [
    re.compile(
        _TIME + rb"WARNING authentication_token_setup\.py:\d+ -- Token authentication "
        rb"is enabled for this Ray cluster\..*"
    ),
    re.compile(
        rb"\[\d{4}-\d\d-\d\d [\d:,.]+ E \d+ \d+\] core_worker\.cc:\d+: Actor with class "
        rb"name: .* has constructor arguments in the object store and max_restarts > 0.*"
    ),
    re.compile(
        _TIME + rb"INFO streaming_executor\.py:\d+ -- (Starting execution of Dataset "
        rb"|Execution plan of Dataset |.*Dataset \S+ execution finished in ).*"
    ),
    re.compile(_TIME + rb"WARNING __init__\.py:\d+ -- Progress bars disabled\. .*"),
]
# the start of a line that may become one of the above: held back until its line is complete
# (a timestamp `2026-...` or a C++ header `[2026-...`); anything else is written on at once, so
# that a progress bar's `\r` updates are not delayed
_MAYBE_NOISE = re.compile(rb"\[?(\d{0,4}|\d{4}-.*)")


class LineFilter:
    """Bytes in, bytes out, less the lines (or the parts of a line) that `patterns` match."""

    def __init__(self, patterns: Sequence[Pattern[bytes]] = NOISE) -> None:
        self.patterns = list(patterns)
        self.line = b""  # the current line, not yet ended
        self.sent = 0  # how much of it was already written on

    def _held_from(self) -> int:
        """Where the unsent part of the current line must be held from (its length: nowhere)."""
        for start in range(self.sent, len(self.line)):
            if start == self.sent or self.line[start - 1 : start] in (b"\r", b"]", b" ", b"\t"):
                if _MAYBE_NOISE.fullmatch(self.line[start:]):
                    return start
        return len(self.line)

    def feed(self, data: bytes) -> bytes:
        """What to write on of `data` now."""
        out = []
        self.line += data
        while b"\n" in self.line:
            line, self.line = self.line.split(b"\n", 1)
            unsent = line[self.sent :]
            kept = unsent
            for pattern in self.patterns:
                kept = pattern.sub(b"", kept)
            # noise runs to the end of its line: its newline goes with it (after a bar's text too)
            out.append(kept + b"\n" if kept == unsent else kept)
            self.sent = 0
        held = self._held_from()
        out.append(self.line[self.sent : held])
        self.sent = held
        return b"".join(out)

    def flush(self) -> bytes:
        """The rest of an unfinished line."""
        rest, self.line, self.sent = self.line[self.sent :], b"", 0
        return rest


class FilteredStream:
    """A text stream that writes to `stream` through a `LineFilter` (Python's `sys.stderr`
    within `filtered_stderr`); other attributes are the stream's."""

    def __init__(self, stream: Any, line_filter: LineFilter) -> None:
        self.stream = stream
        self.line_filter = line_filter

    def write(self, text: str) -> int:
        """Write `text`'s complete lines that the filter keeps; all of `text` counts as written."""
        out = self.line_filter.feed(text.encode("utf-8", "surrogatepass"))
        if out:
            self.stream.write(out.decode("utf-8", "surrogatepass"))
        return len(text)

    def close_filter(self) -> None:
        """Write the rest of an unfinished line."""
        rest = self.line_filter.flush()
        if rest:
            self.stream.write(rest.decode("utf-8", "surrogatepass"))
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def filtered_stderr(patterns: Sequence[Pattern[bytes]] = NOISE) -> Iterator[None]:
    """Within the block, Python's `sys.stderr` and file descriptor 2 (native code's stderr) go
    through a `LineFilter` each; outside the main thread, or without a descriptor 2, only the
    first."""
    python_stderr = sys.stderr
    stream = FilteredStream(python_stderr, LineFilter(patterns))
    sys.stderr = stream  # type: ignore[assignment]
    try:
        with _filtered_descriptor(patterns):
            yield
    finally:
        sys.stderr = python_stderr
        with contextlib.suppress(OSError, ValueError):
            stream.close_filter()


@contextlib.contextmanager
def _filtered_descriptor(patterns: Sequence[Pattern[bytes]]) -> Iterator[None]:
    """Within the block, file descriptor 2 is a pipe that a thread copies to the former one
    through a `LineFilter`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)
    line_filter = LineFilter(patterns)

    def pump() -> None:
        while True:
            try:
                data = os.read(read, 65536)
            except OSError:
                data = b""
            out = line_filter.feed(data) if data else line_filter.flush()
            if out:
                os.write(saved, out)
            if not data:
                return

    thread = threading.Thread(target=pump, name="filtered-stderr", daemon=True)
    thread.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer here: the pump reads to its end
        thread.join(timeout=10)
        if not thread.is_alive():  # else a process started within still holds the pipe
            os.close(read)
            os.close(saved)
