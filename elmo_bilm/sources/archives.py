"""Archives are untrusted input: the one place that extracts or reads them (AllenNLP's
`model.tar.gz`, and biLMs published as `.zip` / `.tar.gz`: NLPL / simple_elmo, SeqVec).

`extract_archive` checks every member before anything is written and refuses, with one line
naming the archive and the member: absolute paths, `..` components, symbolic and hard links whose
target is outside the archive or another link, members below a link, device files, FIFOs or other
special members, (zip) symbolic links of any kind, empty names, names of more than `MAX_DEPTH`
components, and a name given twice (which member is meant would be a guess). Tar archives are then
extracted with Python's `tarfile` data filter (PEP 706) as a second guard; zip members are written
one by one to their checked names. The disk an archive may take is bounded (issue 67): more than
`MAX_MEMBERS` members, or members declaring more than `MAX_EXTRACTED_BYTES` in all for a biLM
(`MAX_MODEL_ARCHIVE_BYTES` for an AllenNLP model archive; a sparse member counts at its full
size), are refused before anything is written, and the bytes a zip member actually decompresses
to are counted against the same budget while writing.

The plugin routes AllenNLP's own `extracted_archive` (behind `load_archive`, `from_archive`
models and the pretrained-model initialiser) through `extracted_archive` below (hook 6 of
`elmo_plugin.hooks`).
"""

import contextlib
import errno
import fnmatch
import json
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import urllib.parse
import zipfile
import zlib
from pathlib import Path
from typing import IO, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from elmo_bilm.utils.files import FormatError, PathLike, _alive, sha256_files
from elmo_bilm.utils.names import is_url

# what opening or reading a damaged archive raises
READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, zlib.error)
# The disk a biLM archive may take: about five times the largest published ELMo's files (the
# 5.5B biLM's weights: under 400 MB); a sparse member counts at its full (apparent) size.
MAX_EXTRACTED_BYTES = 2 * 2**30
# The disk an AllenNLP model archive may take (through `extracted_archive`, for any model once
# the plugin is imported): a task model beside the largest ELMo's weights.
MAX_MODEL_ARCHIVE_BYTES = 4 * 2**30
# A biLM or model archive holds a handful of files (a vocabulary folder: a few more).
MAX_MEMBERS = 10_000
# Components of a member's name: published archives nest two or three deep; deeper names only
# exhaust recursion (`os.makedirs` in extraction) and path lengths.
MAX_DEPTH = 32


def _normal(name: str) -> str:
    """A member name without `./` prefixes or trailing slashes (`..` kept)."""
    return posixpath.normpath(name) if name not in ("", ".") else "."


def _is_absolute(name: str) -> bool:
    return name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) is not None


def _outside(name: str) -> bool:
    """Whether a normalised relative `name` leaves the extraction folder."""
    return name == ".." or name.startswith("../")


def _name_refusal(name: str, is_dir: bool) -> Optional[str]:
    """Why a member named `name` (a folder: `is_dir`) must not be extracted whatever its kind, or
    None."""
    if _normal(name) == "." and not is_dir:
        return "has an empty name"
    if _is_absolute(name):
        return "has an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "has a '..' component"
    depth = len(_normal(name).split("/"))
    if depth > MAX_DEPTH:
        return f"has {depth:,} path components (at most {MAX_DEPTH})"
    return None


def _duplicate(name: str, is_dir: bool, seen: Dict[str, Tuple[str, bool]]) -> Optional[str]:
    """Why `name` repeats a member already `seen` (normalised name -> name, is a folder), or None;
    records it. A folder listed twice is harmless; anything else would leave a guess which of
    the two is meant."""
    normal = _normal(name)
    if normal in seen:
        first, first_is_dir = seen[normal]
        if not (is_dir and first_is_dir):
            also = "" if first == name else f" (also as {first!r})"
            return f"appears twice in the archive{also}"
    seen[normal] = (name, is_dir)
    return None


def _refusal(member: tarfile.TarInfo, links: Set[str]) -> Optional[str]:
    """Why `member` must not be extracted, or None; `links` are the archive's link members."""
    name = member.name
    reason = _name_refusal(name, member.isdir())
    if reason is not None:
        return reason
    normal = _normal(name)
    parts = normal.split("/")
    for end in range(1, len(parts)):
        parent = "/".join(parts[:end])
        if parent in links:
            return f"lies below the link member {parent} (a write through a link)"
    if member.issym() or member.islnk():
        kind = "symbolic link" if member.issym() else "hard link"
        if _is_absolute(member.linkname):
            return f"is a {kind} to the absolute path {member.linkname}"
        base = posixpath.dirname(normal) if member.issym() else ""
        target = posixpath.normpath(posixpath.join(base, member.linkname))
        if _outside(target):
            return f"is a {kind} to {member.linkname}, outside the archive"
        if target in links or target == ".":
            return f"is a {kind} to {member.linkname}, a link or the archive's root"
        return None
    if member.isdev() or member.isfifo():
        return "is a device file or FIFO"
    if not (member.isreg() or member.isdir()):
        return "is not a regular file, folder or link"
    return None


def check_members(archive_file: PathLike, members: List[tarfile.TarInfo]) -> None:
    """Refuse, naming the archive and the member, the first member that could write outside the
    extraction folder (see the module's docstring)."""
    links = {_normal(m.name) for m in members if m.issym() or m.islnk()}
    seen: Dict[str, Tuple[str, bool]] = {}
    for member in members:
        reason = _refusal(member, links) or _duplicate(member.name, member.isdir(), seen)
        if reason is not None:
            raise FormatError(
                f"{archive_file}: member {member.name!r} {reason}; refusing to extract the archive"
            )


def _too_many(archive_file: PathLike) -> FormatError:
    return FormatError(
        f"{archive_file}: more than {MAX_MEMBERS:,} members (a model archive holds a handful); "
        "refusing to extract the archive"
    )


def _members(archive_file: PathLike, tar: tarfile.TarFile) -> List[tarfile.TarInfo]:
    """The members of `tar`, read one header at a time: refused, without reading the rest, past
    `MAX_MEMBERS`."""
    members: List[tarfile.TarInfo] = []
    try:
        for member in tar:
            members.append(member)
            if len(members) > MAX_MEMBERS:
                raise _too_many(archive_file)
        return members
    except READ_ERRORS as error:
        raise FormatError(
            f"{archive_file}: not a readable model.tar.gz (truncated or damaged? {error})"
        ) from error


def _open(archive_file: PathLike) -> tarfile.TarFile:
    try:
        return tarfile.open(archive_file)
    except READ_ERRORS as error:
        detail = getattr(error, "strerror", None) or error
        raise FormatError(
            f"{archive_file}: not a readable model.tar.gz (truncated or damaged? {detail})"
        ) from error


def _check_size(archive_file: PathLike, sizes: Dict[str, int], budget: int) -> None:
    """Refuse members (name -> declared size) declaring more than `budget` bytes in all, naming
    the largest."""
    total = sum(sizes.values())
    if total > budget:
        largest = max(sizes, key=lambda name: sizes[name])
        raise FormatError(
            f"{archive_file}: its members declare {total:,} bytes, more than any ELMo model "
            f"needs ({budget:,}; the largest, member {largest!r}, "
            f"{sizes[largest]:,}); refusing to extract the archive"
        )


def _zip_refusal(info: zipfile.ZipInfo) -> Optional[str]:
    """Why the zip member `info` must not be extracted, or None."""
    name = info.filename
    if name == "":
        return "has an empty name"  # before anything calls `info.is_dir()`: an IndexError
    reason = _name_refusal(name, info.is_dir())
    if reason is not None:
        return reason
    mode = info.external_attr >> 16  # Unix mode where the writer set one; no type bits: a file
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is not a regular file or folder"
    return None


def _copy_counted(
    archive_file: PathLike, name: str, source: IO[bytes], out: IO[bytes], written: int, budget: int
) -> int:
    """Copy the member `name` from `source` to `out`; `written`: the bytes the archive's earlier
    members took, returned with this one's. A zip's declared sizes are the writer's word (a zip
    bomb's may lie): past `budget` bytes actually written, extraction stops."""
    while True:
        chunk = source.read(1 << 20)
        if not chunk:
            return written
        written += len(chunk)
        if written > budget:
            raise FormatError(
                f"{archive_file}: member {name!r} decompresses past {budget:,} "
                "bytes in all, more than its declared size and more than any ELMo model needs; "
                "refusing to extract the archive"
            )
        out.write(chunk)


FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _raise_if_full(error: BaseException, archive_file: PathLike, target: PathLike) -> None:
    """A full disk (or quota) while extracting is said as such, naming where it was written,
    not taken for a damaged archive."""
    if isinstance(error, OSError) and error.errno in FULL_DISK:
        raise OSError(
            error.errno,
            f"{archive_file}: extracting into {target} failed: the disk is full "
            f"({error.strerror or error}); nothing kept",
        ) from error


def _extract_zip(archive_file: PathLike, target: PathLike, budget: int) -> None:
    try:
        with zipfile.ZipFile(archive_file) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise _too_many(archive_file)
            seen: Dict[str, Tuple[str, bool]] = {}
            for info in infos:
                reason = _zip_refusal(info) or _duplicate(info.filename, info.is_dir(), seen)
                if reason is not None:
                    raise FormatError(
                        f"{archive_file}: member {info.filename!r} {reason}; refusing to "
                        "extract the archive"
                    )
            _check_size(archive_file, {info.filename: info.file_size for info in infos}, budget)
            written = 0
            for info in infos:
                path = os.path.join(os.fspath(target), _normal(info.filename))
                if info.is_dir():
                    os.makedirs(path, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with archive.open(info) as source, open(path, "wb") as out:
                    written = _copy_counted(
                        archive_file, info.filename, source, out, written, budget
                    )
    except READ_ERRORS as error:
        if isinstance(error, FormatError):
            raise
        _raise_if_full(error, archive_file, target)
        raise FormatError(
            f"{archive_file}: extracting failed (truncated or damaged? {error})"
        ) from error


def extract_archive(
    archive_file: PathLike, target: PathLike, max_bytes: Optional[int] = None
) -> None:
    """Extract the tar or zip archive `archive_file` into the folder `target`, after checking
    every member (nothing is written when one is refused); tar members then with the `data`
    filter. At most `max_bytes` (`MAX_EXTRACTED_BYTES`, a biLM's budget, if None) are written."""
    budget = MAX_EXTRACTED_BYTES if max_bytes is None else max_bytes
    if zipfile.is_zipfile(archive_file):
        _extract_zip(archive_file, target, budget)
        return
    with _open(archive_file) as tar:
        members = _members(archive_file, tar)
        check_members(archive_file, members)
        _check_size(archive_file, {m.name: m.size for m in members if m.isreg()}, budget)
        try:
            tar.extractall(target, filter="data")
        except tarfile.FilterError as error:
            name = error.tarinfo.name
            raise FormatError(
                f"{archive_file}: member {name!r} refused by the tar data filter ({error})"
            ) from error
        except READ_ERRORS as error:
            _raise_if_full(error, archive_file, target)
            raise FormatError(
                f"{archive_file}: extracting failed (truncated or damaged? {error})"
            ) from error


def checked_members(archive_file: PathLike) -> List[tarfile.TarInfo]:
    """The members of `archive_file`, read through once (a truncated or foreign file is one error
    naming it) and checked as for `extract_archive`."""
    with _open(archive_file) as tar:
        members = _members(archive_file, tar)
    check_members(archive_file, members)
    return members


@contextlib.contextmanager
def open_member(archive_file: PathLike, name: str) -> Iterator[Optional[IO[bytes]]]:
    """The regular-file member `name` of `archive_file` as a file (streamed, not extracted), or
    None if there is none; every member is checked first as for `extract_archive`."""
    with _open(archive_file) as tar:
        members = _members(archive_file, tar)
        check_members(archive_file, members)
        found = [m for m in members if _normal(m.name) == _normal(name)]
        if not found:
            yield None
            return
        member = found[-1]  # tar's rule: the last member of a name wins
        if not member.isreg():
            raise FormatError(f"{archive_file}: member {member.name!r} is not a regular file")
        yield tar.extractfile(member)


@contextlib.contextmanager
def extracted_archive(resolved_archive_file: str, cleanup: bool = True) -> Iterator[str]:
    """AllenNLP's `extracted_archive` (same arguments), extracting through `extract_archive`; the
    temporary folder is removed when extraction fails, and after the block with `cleanup`."""
    tempdir = tempfile.mkdtemp()
    try:
        extract_archive(resolved_archive_file, tempdir, MAX_MODEL_ARCHIVE_BYTES)
    except BaseException:
        shutil.rmtree(tempdir, ignore_errors=True)
        raise
    try:
        yield tempdir
    finally:
        if cleanup:
            shutil.rmtree(tempdir, ignore_errors=True)


# ---- biLMs published as archives (NLPL / simple_elmo zips, SeqVec, a bilm-tf folder packed)

BILM_ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")


def is_bilm_archive(name: Optional[str]) -> bool:
    """Whether `name` (a path or URL) names an archive by its suffix."""
    if not isinstance(name, str):
        return False
    if is_url(name):  # a URL's query is not part of its file's name
        name = urllib.parse.urlsplit(name).path
    return name.lower().endswith(BILM_ARCHIVE_SUFFIXES)


# a folder being unpacked: `.DIGEST.PID.RANDOM` (PID: the process unpacking it); a damaged
# entry being removed, `.DIGEST.PID.damaged`; in `unpacked.sizes`, a record being written,
# `.DIGEST.PID.manifest`
_PARTIAL_FOLDER = re.compile(r"^\.[0-9a-f]{16}\.([0-9]+)\.")


def remove_stale_partials(unpacked_folder: Path) -> None:
    """Remove from a cache folder (`unpacked`, `unpacked.sizes`, `converted`) the hidden partial
    folders and files (`.DIGEST.PID.*`) of processes that died while writing them (killed with
    SIGKILL, say); those of live processes are theirs to finish."""
    try:
        entries = list(os.scandir(unpacked_folder))
    except FileNotFoundError:
        return
    for entry in entries:
        match = _PARTIAL_FOLDER.match(entry.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _alive(pid):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:  # a manifest being written
                with contextlib.suppress(OSError):
                    os.remove(entry.path)


def _check_contents(contains: Callable[[Path], object], partial: Path) -> None:
    """Run `contains` on the extracted `partial` folder; a `FormatError` naming files in it is
    raised again naming them relative to the archive (the folder is about to be removed)."""
    try:
        contains(partial)
    except FormatError as error:
        message = str(error).replace(f"{partial}{os.sep}", "")
        if message == str(error):
            raise
        raise type(error)(message) from None


# the sizes of the files of each entry `cache/unpacked/DIGEST`, written once it is complete:
# `cache/unpacked.sizes/DIGEST.json`
SIZES_FOLDER = "unpacked.sizes"


def _manifest(folder: Path) -> Path:
    """Where the sizes of the entry `folder`'s files are recorded."""
    return folder.parent.with_name(SIZES_FOLDER) / f"{folder.name}.json"


def _sizes(folder: Path) -> Dict[str, int]:
    """Every regular file under `folder` (relative, `/`-separated) and its size."""
    return {
        path.relative_to(folder).as_posix(): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _damage(folder: Path) -> Optional[str]:
    """Why the cache entry `folder` is not the complete extraction it was (a file missing or of
    another size than its manifest says, or no manifest: an entry whose writer died before
    finishing, or one of an older version), or None when it is whole."""
    manifest = _manifest(folder)
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict):
            raise ValueError("not a manifest")
    except FileNotFoundError:
        return f"no record of its files' sizes ({manifest}, written once it is complete)"
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"its record of its files' sizes ({manifest}) is unreadable ({error})"
    for name, size in files.items():
        path = folder / name
        try:
            actual = path.stat().st_size
        except OSError:
            return f"{name} is missing"
        if actual != size:
            return f"{name} has {actual:,} bytes, {size:,} when unpacked"
    return None


def _write_manifest(folder: Path) -> None:
    """Record the sizes of the files of the complete entry `folder` beside it (atomically)."""
    manifest = _manifest(folder)
    manifest.parent.mkdir(exist_ok=True)
    partial = manifest.with_name(f".{folder.name}.{os.getpid()}.manifest")
    remove_stale_partials(manifest.parent)
    partial.write_text(json.dumps({"files": _sizes(folder)}), encoding="utf-8")
    os.replace(partial, manifest)


def _cache_fault(folder: Path, damage: str, error: BaseException) -> OSError:
    """One line for a damaged cache entry that could not be rebuilt: the cache is at fault,
    not the archive."""
    reason = getattr(error, "strerror", None) or str(error)
    if getattr(error, "errno", None) in FULL_DISK:
        reason = f"the disk is full: {reason}"
    return OSError(
        getattr(error, "errno", None) or errno.EIO,
        f"{folder}: this cache entry is damaged ({damage}) and could not be rebuilt ({reason}); "
        "the archive is not at fault: remove the entry, or set ELMO_BILM_CACHE to a writable "
        "folder with room",
    )


def unpacked(
    archive_file: PathLike, cache: Path, contains: Optional[Callable[[Path], object]] = None
) -> Path:
    """The folder `cache/unpacked/DIGEST` holding `archive_file` extracted (once per content:
    extracted into a hidden folder `.DIGEST.PID.RANDOM` beside it, then renamed, so no
    half-extracted folder is ever taken for a complete one; those left by dead processes are
    removed). `contains`, if given, checks the extracted folder before it is kept, raising when
    the archive does not hold what was asked for: then, as on any refusal, nothing is left in
    the cache.

    The entry's file sizes are recorded (`cache/unpacked.sizes/DIGEST.json`) once it is complete, and
    checked at every use: an entry damaged since (a file truncated or removed, or no record) is
    extracted again; if that fails, the error names the entry and `ELMO_BILM_CACHE`, not the
    archive (project issue 79). A full disk is said as such."""
    folder = cache / "unpacked" / sha256_files([archive_file])[:16]
    remove_stale_partials(folder.parent)
    damage = None
    if folder.is_dir():
        damage = _damage(folder)
        if damage is None:
            return folder
        try:
            _set_aside(folder)
        except OSError as error:
            raise _cache_fault(folder, damage, error) from error
    try:
        return _unpack(archive_file, folder, contains)
    except OSError as error:
        if damage is not None:
            raise _cache_fault(folder, damage, error) from error
        if getattr(error, "errno", None) in FULL_DISK:
            raise OSError(
                error.errno,
                f"{error.strerror}; set ELMO_BILM_CACHE to a folder with room for the "
                f"unpacked archive",
            ) from error
        raise


def _set_aside(folder: Path) -> None:
    """Move the damaged entry `folder` out of the way (to a hidden folder whose name the stale
    partials' sweep knows) and remove it."""
    aside = folder.with_name(f".{folder.name}.{os.getpid()}.damaged")
    try:
        os.rename(folder, aside)
    except FileNotFoundError:
        return  # another process set it aside meanwhile
    _manifest(folder).unlink(missing_ok=True)
    shutil.rmtree(aside, ignore_errors=True)


def _unpack(
    archive_file: PathLike, folder: Path, contains: Optional[Callable[[Path], object]]
) -> Path:
    """Extract `archive_file` into the cache entry `folder` (see `unpacked`)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.{os.getpid()}."))
    try:
        extract_archive(archive_file, partial)
        if contains is not None:
            _check_contents(contains, partial)
        os.rename(partial, folder)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if folder.is_dir():  # another process unpacked the same archive meanwhile
            return folder
        raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _write_manifest(folder)
    return folder


def _one(files: List[Path], exact: Sequence[str], patterns: Sequence[str], what: str) -> Path:
    """The file named one of `exact` (in that order), else the one file matching the first
    pattern that matches any."""
    for name in exact:
        found = [path for path in files if path.name == name]
        if len(found) == 1:
            return found[0]
    for pattern in patterns:
        found = [path for path in files if fnmatch.fnmatch(path.name, pattern)]
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(sorted(str(p) for p in found))
            raise FormatError(f"more than one {what} file ({pattern}): {names}")
    raise FileNotFoundError(f"no {what} file ({' or '.join([*exact, *patterns])})")


# A biLM's folder holds a handful of files; one holding more than this many entries is not one
# (`--options-file /usr`), refused at once instead of searched for minutes
MAX_FOLDER_ENTRIES = 10_000


def folder_entries(folder: PathLike, source: str) -> List[Path]:
    """Every entry under `folder` (recursively, links not followed), in name order; a folder
    with more than `MAX_FOLDER_ENTRIES` is a FormatError naming `source` as soon as that many
    are seen."""
    entries: List[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in (*dirs, *files):
            entries.append(Path(root, name))
        if len(entries) > MAX_FOLDER_ENTRIES:
            raise FormatError(
                f"{source}: more than {MAX_FOLDER_ENTRIES:,} files and folders under it, not a "
                "biLM's folder (name the folder holding the biLM's files)"
            )
    return sorted(entries)


def bilm_files_in(folder: PathLike, source: str, options_only: bool = False) -> Tuple[str, str]:
    """The options and weights of the bilm-tf biLM in `folder` (searched recursively):
    `options.json` or the one `*options*.json`; `weights.hdf5`, `model.hdf5` (NLPL /
    simple_elmo) or the one `*weights*.hdf5` or `*.hdf5` (`options_only`: the options alone, the
    weights "" ). Errors name `source`, the archive or repository the folder came from."""
    files = [path for path in folder_entries(folder, source) if path.is_file()]
    try:
        options = _one(files, ["options.json"], ["*options*.json"], "options")
        if options_only:
            return str(options), ""
        weights = _one(
            files, ["weights.hdf5", "model.hdf5"], ["*weights*.hdf5", "*.hdf5"], "weights"
        )
    except (FormatError, FileNotFoundError) as error:
        listing = ", ".join(str(p.relative_to(folder)) for p in files[:20]) or "nothing"
        raise FormatError(f"{source}: {error}; it holds {listing}") from None
    return str(options), str(weights)
