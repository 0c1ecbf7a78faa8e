"""`PATH[START:END]` data paths: a slice of a file's records (SNLI pairs, SQuAD articles), read
the same way by the readers and by the config hook (`config_env`), which checks the path."""

import re
from typing import Optional, Tuple

from elmo_bilm.utils.files import FormatError

_SLICE = re.compile(r"^(?P<path>.*)(?P<slice>\[(?P<start>-?\d+)?:(?P<end>-?\d+)?\])$")


def slice_parts(file_path: str) -> Tuple[str, str]:
    """`PATH[START:END]` -> `(PATH, "[START:END]")`; a path without a slice -> `(path, "")`."""
    match = _SLICE.match(file_path)
    return (file_path, "") if match is None else (match["path"], match["slice"])


def split_slice(file_path: str) -> Tuple[str, int, Optional[int]]:
    """`PATH[START:END]` -> `(PATH, START, END)` (0-based, END excluded, either may be empty);
    a path without a slice -> `(path, 0, None)`. A negative bound (records are streamed, so they
    are counted from the start only) is a `FormatError`."""
    match = _SLICE.match(file_path)
    if match is None:
        return file_path, 0, None
    start, end = match["start"], match["end"]
    if (start or "").startswith("-") or (end or "").startswith("-"):
        raise FormatError(
            f"{file_path}: a slice counts records from the start of the file: START and END "
            "cannot be negative"
        )
    return match["path"], int(start or 0), int(end) if end else None
