"""File helpers shared by the plugin: format errors, atomic outputs, path lists, text opening."""

import contextlib
import glob
import gzip
import os
from typing import BinaryIO, Iterator, List, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]


class FormatError(ValueError):
    """An input file that is not in the expected format; the message names the file (and line)."""


# What a command reports as one line `NAME: error: ...` (exit status 1) instead of a traceback:
# bad input, existing or missing files, unwritable folders, impossible options.
USER_ERRORS = (FormatError, ValueError, OSError)


@contextlib.contextmanager
def atomic_output(path: PathLike, overwrite: bool = False) -> Iterator[str]:
    """Yield a temporary `PATH.partial` to write; on success it becomes `path`, on failure it is
    removed, so `path` only ever holds a complete file. An existing `path` is an error unless
    `overwrite`."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; not overwriting it")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder}: no such folder for {os.path.basename(path)}")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"{folder}: not writable, cannot write {os.path.basename(path)}")
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


def open_bytes(path: PathLike) -> BinaryIO:
    """Open a file for reading bytes, gunzipping it when it starts with the gzip magic bytes;
    a file that is not text (NUL bytes in its first 8 KiB) is a `FormatError` up front."""
    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        handle = gzip.open(path, "rb") if gzipped else open(path, "rb")
        sample = handle.read(8192)
        handle.seek(0)
    except (OSError, EOFError) as error:
        raise FormatError(f"{path}: cannot read ({error})") from error
    if b"\x00" in sample:
        handle.close()
        raise FormatError(f"{path}: looks like a binary file (NUL bytes), not text")
    return handle  # type: ignore[return-value]


def numbered_lines(path: PathLike) -> Iterator[Tuple[int, str]]:
    """`(line_number, text)` of a UTF-8 (possibly gzip) file; errors name the file and line."""
    line_number = 0
    with open_bytes(path) as handle:
        try:
            for line_number, raw in enumerate(handle, start=1):
                try:
                    yield line_number, raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise FormatError(
                        f"{path}:{line_number}: not UTF-8 text ({error.reason})"
                    ) from error
        except (OSError, EOFError) as error:
            raise FormatError(f"{path}:{line_number + 1}: read failed ({error})") from error
