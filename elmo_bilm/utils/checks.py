"""Checks made before any work: the ranges of sizes and counts (the API's arguments when an object
is made or a run starts, the commands' options when they are parsed) and the output a run will
write, so that a wrong value fails in one line before a biLM loads, a line is counted or Ray
starts, never after the work."""

import argparse
import math
import numbers
import os
from typing import Any, Callable, Optional

import numpy

from elmo_bilm.utils.files import PathLike, UsageError, check_name_length


def whole_number(value: Any, name: str, minimum: int = 1, optional: bool = False) -> Optional[int]:
    """`value` as an int of at least `minimum` (`optional`: None passes); a bool, a float with
    a fraction, NaN, infinity or a smaller number is a UsageError naming `name`."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if isinstance(value, numbers.Integral):
        number = int(value)
    elif math.isfinite(float(value)) and float(value).is_integer():
        number = int(float(value))
    else:
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if number < minimum:
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return number


def true_or_false(value: Any, name: str) -> bool:
    """`value` as a bool (numpy's too); anything else (`1`, `"no"`, which `bool()` reads as
    true) a UsageError naming `name`, as the originals take a Python bool."""
    if not isinstance(value, (bool, numpy.bool_)):
        raise UsageError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def finite_number(value: Any, name: str, minimum: Optional[float] = None) -> float:
    """`value` as a finite float (at least `minimum`); else a UsageError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or (minimum is not None and number < minimum):
        bound = f" >= {minimum:g}" if minimum is not None else ""
        raise UsageError(f"{name} must be a finite number{bound}, got {value!r}")
    return number


def count_argument(minimum: int = 1) -> Callable[[str], int]:
    """An argparse `type`: a whole number of at least `minimum`, refused at parse time (argparse
    then prints `PROG: error: argument --OPTION: ...` and exits with status 2)."""

    def parse(text: str) -> int:
        try:
            number = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number >= {minimum}, got {text!r}"
            ) from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
        return number

    parse.__name__ = "whole number"  # argparse names the type in some messages
    return parse


def number_argument(
    minimum: Optional[float] = None, fraction: bool = False
) -> Callable[[str], float]:
    """An argparse `type`: a finite number (at least `minimum`; `fraction`: in (0, 1]), refused
    at parse time (NaN and infinity too)."""
    bound = " in (0, 1]" if fraction else f" >= {minimum:g}" if minimum is not None else ""

    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if fraction:
            wrong = not 0 < number <= 1  # NaN too
        else:
            wrong = not math.isfinite(number) or (minimum is not None and number < minimum)
        if wrong:
            raise argparse.ArgumentTypeError(f"expected a finite number{bound}, got {text!r}")
        return number

    parse.__name__ = "number"
    return parse


def check_output(
    path: PathLike, overwrite: bool, kind: str = "file", flag: str = "overwrite=True"
) -> str:
    """Before any work, the output a run will write. A file (`kind="file"`): not a folder, not
    there unless `overwrite`, in a folder that exists and can be written. A folder
    (`kind="folder"`, made if missing; its files are the caller's to check): not a file, its
    nearest existing folder writable. Returns the path as a string; each problem is one error
    naming the path and what to do (`flag`: how the caller asks to overwrite, `--overwrite` on
    a command line)."""
    text = os.fspath(path)
    if not text:
        raise UsageError("no output named (an empty path)")
    if kind == "folder":
        if os.path.lexists(text) and not os.path.isdir(text):
            raise NotADirectoryError(f"{text}: a file, not a folder; name the folder to write")
        folder = os.path.abspath(text)
        while not os.path.lexists(folder):
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise NotADirectoryError(f"{folder}: not a folder, cannot make {text} under it")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(f"{folder}: not writable, cannot write in {text}")
        return text
    if kind == "file" and os.path.isdir(text):
        raise IsADirectoryError(f"{text}: a folder; name the file to write (e.g. {text}/out.hdf5)")
    if kind == "file" and text.endswith(("/", os.sep)):
        raise IsADirectoryError(f"{text}: ends in a separator (a folder's name); name the file")
    if kind == "file" and os.path.exists(text) and not os.path.isfile(text):
        # the output is written beside it and renamed over it: a device (/dev/null), a FIFO or
        # a socket would be replaced by a regular file, not written to
        raise UsageError(
            f"{text}: not a regular file (a device, FIFO or socket); the output is written to a "
            "file and renamed into place, so name a file"
        )
    if os.path.lexists(text) and not overwrite:
        link = " (a link to nowhere)" if not os.path.exists(text) else ""
        raise FileExistsError(f"{text} exists{link}; pass {flag} to replace it")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder}: no such folder for {os.path.basename(text)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"{folder}: not writable, cannot write {os.path.basename(text)}")
    if kind == "file":
        check_name_length(text)  # before any work: it failed once the biLM had loaded
    return text
