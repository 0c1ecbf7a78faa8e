"""Outputs of several files that belong together (bilm-tf's `options.json` + `weights.hdf5`,
a converted checkpoint's softmax beside them), written as one: all of the new set or all of the
old one, never a mix (project issue 79: `elmo-convert --overwrite` on a disk that filled left
the new options beside the old weights).

`output_set` stages the new files in a hidden folder `.elmo-out.PID.partial` in each output's
folder (the same file system, so that moving them in is a rename, which takes no space). Only
when every file is complete are they swapped in: each old file renamed aside into the staging
folder, each new one renamed into place, a `committed` mark made, the old files removed. A
failure anywhere before the mark (a full disk, a file that cannot be moved) puts the old set
back; a process killed meanwhile leaves its staging folder, which the next writer into that
folder finds (its process dead, or the folder untouched for `STALE_SECONDS`) and undoes the
same way: restores the old files it holds unless the mark says the swap was complete, then
removes it.
"""

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import time
from typing import Dict, Iterator, List, Mapping, Tuple

from elmo_bilm.utils.files import PathLike, _alive, _claim, terminate_raises

STAGING = ".elmo-out.{pid}.partial"
_STAGING = re.compile(r"^\.elmo-(?:out|convert)\.([0-9]+)\.partial$")
# a staging folder untouched this long is abandoned whatever its process id says (the id of a
# writer that died may since have been given to another process)
STALE_SECONDS = 24 * 3600
_NAMES = "set.json"  # the staging folder's record of the set: {name: output path}
_OLD = "old"  # the old outputs, renamed aside during the swap
_COMMITTED = "committed"  # made once every new file is in place
_NEW = "new"
FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _stale(folder: str) -> bool:
    """Whether the staging folder `folder` belongs to no live writer."""
    match = _STAGING.match(os.path.basename(folder))
    if match is None:
        return False
    pid = int(match.group(1))
    try:
        age = time.time() - os.stat(folder).st_mtime
    except FileNotFoundError:
        return False
    return pid != os.getpid() and (not _alive(pid) or age > STALE_SECONDS)


def _undo(staging: str) -> None:
    """Put back the old outputs a swap in `staging` renamed aside (unless its `committed` mark
    says the swap was complete), remove new files that had no old one, then remove `staging`."""
    try:
        status = os.lstat(staging)
        with open(os.path.join(staging, _NAMES), encoding="utf-8") as handle:
            paths: Dict[str, str] = json.load(handle)
        if not isinstance(paths, dict):
            raise ValueError("not a record of outputs")
    except (OSError, ValueError):
        paths = {}  # nothing was swapped yet: the staging folder alone
    else:
        # a record is acted on only where this user wrote it, for files beside the staging
        # folder of the names it staged them under: one planted in a shared folder by another
        # user moves or removes nothing
        owner = getattr(os, "getuid", lambda: status.st_uid)()
        folder = os.path.dirname(os.path.abspath(staging))
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != owner:
            paths = {}
        paths = {
            name: path
            for name, path in paths.items()
            if isinstance(name, str)
            and isinstance(path, str)
            and os.path.dirname(path) == folder
            and name.endswith("-" + os.path.basename(path))
            and os.sep not in name
        }
    old, new = os.path.join(staging, _OLD), os.path.join(staging, _NEW)
    # `old` is made when the swap starts: without it no output was touched
    if os.path.isdir(old) and not os.path.exists(os.path.join(staging, _COMMITTED)):
        for name, path in paths.items():
            if os.path.exists(os.path.join(old, name)):
                os.replace(os.path.join(old, name), path)
            elif not os.path.exists(os.path.join(new, name)) and os.path.exists(path):
                os.remove(path)  # moved in, with no old file to restore
    shutil.rmtree(staging, ignore_errors=True)


def sweep(folder: PathLike) -> List[str]:
    """Undo and remove the staging folders in `folder` of writers that died or whose folders
    are older than `STALE_SECONDS` (`_undo`); returns their paths. A live writer's are left."""
    folder = os.fspath(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    swept = []
    for name in names:
        path = os.path.join(folder, name)
        if _STAGING.match(name) and os.path.isdir(path) and _stale(path):
            _undo(path)
            swept.append(path)
    return swept


def _live_writer(folder: str) -> None:
    """Refuse to write into `folder` while a live writer's staging folder is there."""
    for name in os.listdir(folder):
        match = _STAGING.match(name)
        if match is not None and int(match.group(1)) != os.getpid():
            raise FileExistsError(
                f"{folder} is being written by process {match.group(1)} (its {name}); wait for "
                "it or write elsewhere"
            )


def _swap(stagings: Mapping[str, str], staged: Mapping[str, Tuple[str, str]]) -> None:
    """Move every staged file into place as one (see the module's docstring); on failure the old
    outputs are back in place before the error is raised."""
    try:
        for staging in stagings.values():
            os.mkdir(os.path.join(staging, _OLD))
        for name, (staging, path) in staged.items():
            if os.path.lexists(path):
                os.replace(path, os.path.join(staging, _OLD, name))
        for name, (staging, path) in staged.items():
            os.replace(os.path.join(staging, _NEW, name), path)
        for staging in stagings.values():
            os.mkdir(os.path.join(staging, _COMMITTED))
    except BaseException:
        for staging in stagings.values():
            if not os.path.exists(os.path.join(staging, _COMMITTED)):
                _undo(staging)
        raise


def _full_disk(error: OSError, paths: Mapping[str, str]) -> OSError:
    """One line for a set that did not fit on the disk: nothing replaced."""
    listing = ", ".join(sorted(paths.values()))
    folder = os.path.dirname(sorted(paths.values())[0]) or "."
    try:
        free = f", {shutil.disk_usage(folder).free / 1e6:,.1f} MB free"
    except OSError:
        free = ""
    return OSError(
        error.errno,
        f"{listing}: the disk is full ({error.strerror or error}{free}); nothing was "
        "written, the files there before are as they were",
    )


@contextlib.contextmanager
def output_set(paths: Mapping[str, PathLike], overwrite: bool = False) -> Iterator[Dict[str, str]]:
    """Yield {kind: a staged path to write} for the outputs `paths` ({kind: path}); when the
    block ends, every staged file is moved into place as one (see the module's docstring). An
    existing output is an error unless `overwrite` (checked before the block runs); the staged
    files of an error, Ctrl-C or SIGTERM are removed and the outputs left as they were; a
    writer that died before is cleaned up after, a live one writing into the same folder is an
    error. A full disk is one line saying so. The outputs' folders must exist."""
    outputs = {kind: os.path.abspath(os.fspath(path)) for kind, path in paths.items()}
    if len(set(outputs.values())) != len(outputs):
        raise ValueError(f"an output named twice: {sorted(outputs.values())}")
    for path in outputs.values():
        if os.path.isdir(path):  # --overwrite would have removed the folder and all it holds
            raise IsADirectoryError(f"{path}: a folder, not a file; name another output")
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path} exists; not overwriting it (--overwrite replaces it)")
    folders = sorted({os.path.dirname(path) for path in outputs.values()})
    for path in outputs.values():
        folder, name = os.path.split(path)
        if os.path.lexists(folder) and not os.path.isdir(folder):
            raise NotADirectoryError(f"{folder}: a file, not a folder; cannot write {name} in it")
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"{folder}: no such folder for {name}")
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"{folder}: not writable, cannot write {name}")
    for folder in folders:
        sweep(folder)
        _live_writer(folder)
    for path in outputs.values():
        _claim(path)  # a live `atomic_output` writer of it refused, dead ones' partials removed
    stagings: Dict[str, str] = {}
    staged: Dict[str, Tuple[str, str]] = {}  # unique name -> (staging folder, output path)
    names: Dict[str, str] = {}  # kind -> unique name
    try:
        for folder in folders:
            staging = os.path.join(folder, STAGING.format(pid=os.getpid()))
            os.mkdir(staging)
            stagings[folder] = staging
            os.mkdir(os.path.join(staging, _NEW))
        for index, (kind, path) in enumerate(outputs.items()):
            names[kind] = f"{index}-{os.path.basename(path)}"
            staged[names[kind]] = (stagings[os.path.dirname(path)], path)
        for staging in stagings.values():
            record = {name: path for name, (where, path) in staged.items() if where == staging}
            with open(os.path.join(staging, _NAMES), "w", encoding="utf-8") as handle:
                json.dump(record, handle)
        with terminate_raises():
            yield {kind: os.path.join(staged[name][0], _NEW, name) for kind, name in names.items()}
            if not overwrite:
                for path in outputs.values():
                    if os.path.lexists(path):
                        raise FileExistsError(
                            f"{path} appeared while this process wrote it; not overwriting it"
                        )
            _swap(stagings, staged)
    except OSError as error:
        if error.errno in FULL_DISK:
            raise _full_disk(error, outputs) from error
        raise
    finally:
        for staging in stagings.values():
            shutil.rmtree(staging, ignore_errors=True)
