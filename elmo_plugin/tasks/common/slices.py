"""`PATH[START:END]` data paths: a slice of a file's records (SNLI pairs, SQuAD articles)."""

import re
from typing import Optional, Tuple

_SLICE = re.compile(r"^(?P<path>.*)\[(?P<start>\d*):(?P<end>\d*)\]$")


def split_slice(file_path: str) -> Tuple[str, int, Optional[int]]:
    """`PATH[START:END]` -> `(PATH, START, END)` (0-based, END excluded, either may be empty);
    a path without a slice -> `(path, 0, None)`."""
    match = _SLICE.match(file_path)
    if match is None:
        return file_path, 0, None
    start, end = match["start"], match["end"]
    return match["path"], int(start or 0), int(end) if end else None
