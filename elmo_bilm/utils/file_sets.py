"""Outputs of several files that belong together (bilm-tf's `options.json` + `weights.hdf5`,
a converted checkpoint's softmax beside them), written as one: all of the new set or all of the
old one, never a mix (project issue 79: `elmo-convert --overwrite` on a disk that filled left
the new options beside the old weights).

A writer holds the lock of each folder the set goes into (`LOCK`, an `flock` that dies with its
process: a lock held is a live writer, project issue 88) and of each output, and stages the new
files in a hidden folder of a name unique to it (`.elmo-out.RANDOM.partial`, made by `mkdtemp`)
in each output's folder (the same file system, so that moving them in is a rename). Only when
every file is complete are they swapped in: each old file renamed aside into the staging folder,
each new one renamed into place, then one `committed` mark made in the first staging folder (the
set's one commit point, wherever its files go), the old files removed. A failure anywhere before
the mark (a full disk, a file that cannot be moved) puts the old set back. A process killed
meanwhile leaves its staging folders; whoever next holds the lock of any folder they are in
takes the locks of the set's other folders too and undoes the whole set the same way: restores
the old files unless the mark says the swap was complete, then removes every staging folder.
Folders are compared as real paths (`os.path.realpath`), so a folder named through a link is
the same folder as by its real path. A set whose one folder does not exist yet is written into
a hidden folder beside it that becomes the folder by one rename (`_new_folder`).
"""

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from typing import Dict, Iterator, List, Mapping, Tuple

from elmo_bilm.utils.files import (
    PathLike,
    UsageError,
    _clear_partials,
    _hidden_name,
    check_name_length,
    output_lock,
    terminate_raises,
    writer_lock,
)

STAGING_PREFIX, STAGING_SUFFIX = ".elmo-out.", ".partial"
# a staging folder: this version's (RANDOM from mkdtemp), and earlier versions' (a process id)
_STAGING = re.compile(r"^\.elmo-(?:out|convert)\.[0-9A-Za-z_]+\.partial$")
_OUTPUT_LOCK = re.compile(r"^\.elmo-[0-9a-f]{16}\.lock$")  # `output_lock`'s
LOCK = ".elmo-out.lock"  # in each output folder, held while a set is written or undone there
_NAMES = "set.json"  # the staging folder's record: {"files": {name: path}, "stagings": [...]}
_OLD = "old"  # the old outputs, renamed aside during the swap
_COMMITTED = "committed"  # made in the first staging folder once every new file is in place
_NEW = "new"
FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _record(staging: str) -> Tuple[Dict[str, str], List[str]]:
    """The files `staging` stages ({name: output path}, only those beside it) and the set's
    staging folders (the first holds the commit mark); nothing where this user did not write it
    (a record planted in a shared folder by another user moves or removes nothing)."""
    try:
        status = os.lstat(staging)
        with open(os.path.join(staging, _NAMES), encoding="utf-8") as handle:
            record = json.load(handle)
        if not isinstance(record, dict):
            raise ValueError("not a record of outputs")
    except (OSError, ValueError):
        return {}, [staging]  # nothing was swapped yet: the staging folder alone
    owner = getattr(os, "getuid", lambda: status.st_uid)()
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != owner:
        return {}, [staging]
    files, stagings = record.get("files"), record.get("stagings")
    if files is None:  # an earlier version's record: {name: path}, one folder
        files, stagings = record, [staging]
    if not isinstance(files, dict) or not isinstance(stagings, list):
        return {}, [staging]
    folder = os.path.dirname(staging)
    files = {
        name: path
        for name, path in files.items()
        if isinstance(name, str)
        and isinstance(path, str)
        and os.path.dirname(path) == folder
        and (name.split(".")[0].isdigit() or name.endswith("-" + os.path.basename(path)))
        and os.sep not in name
    }
    stagings = [
        path
        for path in stagings
        if isinstance(path, str) and os.path.isabs(path) and _STAGING.match(os.path.basename(path))
    ]
    if staging not in stagings:
        stagings.append(staging)
    return files, stagings


def _undo_one(staging: str, committed: bool) -> None:
    """Put back the old outputs a swap in `staging` renamed aside (unless `committed`), remove
    new files that had no old one, then remove `staging`."""
    files, _ = _record(staging)
    old, new = os.path.join(staging, _OLD), os.path.join(staging, _NEW)
    # `old` is made when the swap starts: without it no output was touched
    if os.path.isdir(old) and not committed:
        for name, path in files.items():
            if os.path.lexists(os.path.join(old, name)):
                os.replace(os.path.join(old, name), path)
            elif not os.path.lexists(os.path.join(new, name)) and os.path.lexists(path):
                os.remove(path)  # moved in, with no old file to restore
    shutil.rmtree(staging, ignore_errors=True)
    for path in files.values():  # the outputs' locks the dead writer left: removed
        with contextlib.suppress(OSError, UsageError):
            with output_lock(path):
                pass


def _undo(stagings: List[str]) -> None:
    """Undo a set staged in `stagings` (the first holds the commit mark): every staging folder
    restored unless the mark is there, the first removed last, so that the mark outlives them."""
    committed = os.path.isdir(os.path.join(stagings[0], _COMMITTED))
    for staging in reversed(stagings):
        if os.path.isdir(staging):
            _undo_one(staging, committed)


def _recover(staging: str, held: List[str]) -> None:
    """Undo the set a dead writer left `staging` of, in every folder it touched; the locks of
    the folders not in `held` are taken for it (one that a live writer holds: an error)."""
    _, stagings = _record(staging)
    others = sorted({os.path.dirname(path) for path in stagings} - set(held))
    with contextlib.ExitStack() as locks:
        for folder in others:
            locks.enter_context(
                writer_lock(
                    os.path.join(folder, LOCK),
                    f"{folder} (it holds part of a set whose write was interrupted, beside "
                    f"{os.path.dirname(staging)})",
                )
            )
        _undo(stagings)


def sweep(folder: PathLike) -> List[str]:
    """Undo and remove the staging folders in `folder` of writers that died (`_recover`, the
    set's other folders too); returns their paths. The caller holds `folder`'s lock, else it is
    taken here (a live writer's: an error)."""
    folder = os.path.realpath(os.fspath(folder))
    with writer_lock(os.path.join(folder, LOCK), folder):
        return _sweep(folder, [folder])


def _sweep(folder: str, held: List[str]) -> List[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    swept = []
    for name in sorted(names):
        path = os.path.join(folder, name)
        if _STAGING.match(name) and os.path.isdir(path) and not os.path.islink(path):
            _recover(path, held)
            swept.append(path)
        elif _OUTPUT_LOCK.match(name):  # an output's lock a killed writer left: removed
            with contextlib.suppress(FileExistsError, OSError, UsageError):
                with writer_lock(path, path):
                    pass
    return swept


def _swap(stagings: List[str], staged: Mapping[str, Tuple[str, str]]) -> None:
    """Move every staged file into place as one (see the module's docstring); on failure the old
    outputs are back in place before the error is raised."""
    try:
        for staging in stagings:
            os.mkdir(os.path.join(staging, _OLD))
        for name, (staging, path) in staged.items():
            if os.path.lexists(path):
                os.replace(path, os.path.join(staging, _OLD, name))
        for name, (staging, path) in staged.items():
            os.replace(os.path.join(staging, _NEW, name), path)
        os.mkdir(os.path.join(stagings[0], _COMMITTED))  # the set's one commit point
    except BaseException:
        _undo(stagings)
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


def _check(path: str, overwrite: bool, new_folder: bool) -> None:
    """The checks of one output before any work: a file's name in a writable folder (or one
    to be made in a writable folder), not there unless `overwrite` (a dangling link is there),
    never a folder."""
    folder, name = os.path.split(path)
    if new_folder:
        folder = os.path.dirname(folder)  # made in its parent
    if name in ("", ".", ".."):
        raise IsADirectoryError(f"{path}: names a folder, not a file; name the file to write")
    if os.path.isdir(path):  # --overwrite would have removed the folder and all it holds
        raise IsADirectoryError(f"{path}: a folder, not a file; name another output")
    if os.path.lexists(path) and not overwrite:
        link = " (a link to nowhere)" if not os.path.exists(path) else ""
        raise FileExistsError(f"{path} exists{link}; not overwriting it (--overwrite replaces it)")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise NotADirectoryError(f"{folder}: a file, not a folder; cannot write {name} in it")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder}: no such folder for {name}")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"{folder}: not writable, cannot write {name}")
    check_name_length(path)


@contextlib.contextmanager
def output_set(paths: Mapping[str, PathLike], overwrite: bool = False) -> Iterator[Dict[str, str]]:
    """Yield {kind: a staged path to write} for the outputs `paths` ({kind: path}); when the
    block ends, every staged file is moved into place as one (see the module's docstring). An
    existing output (a dangling link too) is an error unless `overwrite` (checked before the
    block runs), a folder always; the staged files of an error, Ctrl-C or SIGTERM are removed
    and the outputs left as they were; a writer that died before is cleaned up after, a live one
    writing into the same folder (another process, or another thread of this one) is an error.
    A full disk is one line saying so. The outputs' folders must exist, or be one folder whose
    parent does: then it is made by one rename of the complete set's staging folder. No
    outputs: nothing to stage or lock (it was an IndexError on the way out)."""
    if not paths:
        yield {}
        return
    given = {kind: os.path.abspath(os.fspath(path)) for kind, path in paths.items()}
    named = {os.path.dirname(path) for path in given.values()}
    new_folder = len(named) == 1 and not os.path.lexists(next(iter(named)))
    new_folder = new_folder and os.path.isdir(os.path.dirname(next(iter(named))))
    for path in given.values():
        _check(path, overwrite, new_folder)
    # the folders as real paths: one named through a link is the folder named by its real path
    outputs = {
        kind: os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        for kind, path in given.items()
    }
    if len(set(outputs.values())) != len(outputs):
        raise ValueError(f"an output named twice: {sorted(given.values())}")
    folders = sorted({os.path.dirname(path) for path in outputs.values()})
    if new_folder:
        with _new_folder(outputs, given, folders[0]) as staged:
            yield staged
        return
    with contextlib.ExitStack() as locks:
        for folder in folders:
            locks.enter_context(writer_lock(os.path.join(folder, LOCK), folder))
        for path in outputs.values():
            locks.enter_context(output_lock(path))  # a live `atomic_output` of it refused
        for folder in folders:
            _sweep(folder, folders)
            _clear_new_folder(folder)
        for path in outputs.values():
            _clear_partials(path)
        with _staged(outputs, given, folders, overwrite) as staged:
            yield staged


def _clear_new_folder(folder: str) -> None:
    """Remove what a writer of `folder` as a new folder (`_new_folder`) left in its parent when
    killed after its rename; nothing where the parent cannot be written or a writer holds it."""
    if not os.access(os.path.dirname(folder), os.W_OK):
        return
    with contextlib.suppress(OSError, UsageError):
        with output_lock(folder):
            _clear_partials(folder)


@contextlib.contextmanager
def _new_folder(
    outputs: Mapping[str, str], given: Mapping[str, str], folder: str
) -> Iterator[Dict[str, str]]:
    """A set whose folder does not exist yet: written, under their own names, into a hidden
    folder beside it (`atomic_output`'s partial name, under the folder's `output_lock`) that
    becomes the folder by one rename; a rename onto a folder that appeared meanwhile with
    files in it fails, and nothing is replaced."""
    with output_lock(folder):
        _clear_partials(folder)
        staging = tempfile.mkdtemp(
            dir=os.path.dirname(folder),
            prefix=os.path.basename(_hidden_name(folder, ".")),
            suffix=STAGING_SUFFIX,
        )
        try:
            new = os.path.join(staging, _NEW)
            os.mkdir(new)  # the folder-to-be, its mode as the umask gives
            with terminate_raises():
                yield {
                    kind: os.path.join(new, os.path.basename(path))
                    for kind, path in outputs.items()
                }
                try:
                    os.rename(new, folder)
                except OSError as error:
                    if error.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                        raise
                    raise FileExistsError(
                        f"{os.path.dirname(sorted(given.values())[0])} appeared while this "
                        "process wrote it; not overwriting it"
                    ) from None
        except OSError as error:
            if error.errno in FULL_DISK:
                raise _full_disk(error, given) from error
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _staged(
    outputs: Mapping[str, str], given: Mapping[str, str], folders: List[str], overwrite: bool
) -> Iterator[Dict[str, str]]:
    """`output_set`'s staging and swap, its locks held."""
    stagings: Dict[str, str] = {}
    staged: Dict[str, Tuple[str, str]] = {}  # short unique name -> (staging folder, output)
    names: Dict[str, str] = {}  # kind -> short unique name
    try:
        for folder in folders:  # the first one made first: it holds the set's commit mark
            staging = tempfile.mkdtemp(dir=folder, prefix=STAGING_PREFIX, suffix=STAGING_SUFFIX)
            stagings[folder] = staging
            os.mkdir(os.path.join(staging, _NEW))
        order = [stagings[folder] for folder in folders]
        for index, (kind, path) in enumerate(outputs.items()):
            # short (the output's name may be as long as allowed), its extension kept
            extension = os.path.splitext(path)[1]
            names[kind] = f"{index}{extension if len(os.fsencode(extension)) <= 16 else ''}"
            staged[names[kind]] = (stagings[os.path.dirname(path)], path)
        for staging in order:
            files = {name: path for name, (where, path) in staged.items() if where == staging}
            with open(os.path.join(staging, _NAMES), "w", encoding="utf-8") as handle:
                json.dump({"files": files, "stagings": order}, handle)
        with terminate_raises():
            yield {kind: os.path.join(staged[name][0], _NEW, name) for kind, name in names.items()}
            if not overwrite:
                for path in given.values():
                    if os.path.lexists(path):
                        raise FileExistsError(
                            f"{path} appeared while this process wrote it; not overwriting it"
                        )
            _swap(order, staged)
    except OSError as error:
        if error.errno in FULL_DISK:
            raise _full_disk(error, given) from error
        raise
    finally:
        for staging in reversed(list(stagings.values())):  # the commit mark's folder last
            shutil.rmtree(staging, ignore_errors=True)
