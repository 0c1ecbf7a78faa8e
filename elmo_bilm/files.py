"""File helpers shared by the plugin: format errors, atomic outputs, path lists, text opening."""

import contextlib
import glob
import gzip
import os
from typing import IO, Iterator, List, Union

PathLike = Union[str, "os.PathLike[str]"]


class FormatError(ValueError):
    """An input file that is not in the expected format; the message names the file (and line)."""


@contextlib.contextmanager
def atomic_output(path: PathLike, overwrite: bool = False) -> Iterator[str]:
    """Yield a temporary `PATH.partial` to write; on success it becomes `path`, on failure it is
    removed, so `path` only ever holds a complete file. An existing `path` is an error unless
    `overwrite`."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; not overwriting it")
    partial = f"{path}.partial"
    try:
        yield partial
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def expand_paths(spec: PathLike) -> List[str]:
    """A directory (its visible files, sorted), a glob (its matches, sorted; none is an error
    naming `spec`) or a file (returned as it is: opening it reports a missing one)."""
    spec = os.fspath(spec)
    if os.path.isdir(spec):
        files = sorted(
            os.path.join(spec, name)
            for name in os.listdir(spec)
            if os.path.isfile(os.path.join(spec, name)) and not name.startswith(".")
        )
    elif any(char in spec for char in "*?["):
        files = sorted(glob.glob(spec))
    else:
        files = [spec]
    if not files:
        raise FileNotFoundError(f"{spec}: no files in that directory or glob")
    return files


def open_text(path: PathLike) -> IO[str]:
    """Open a UTF-8 text file for reading, gunzipping it when it starts with the gzip magic bytes."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8") if gzipped else open(path, encoding="utf-8")
