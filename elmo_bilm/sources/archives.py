"""Archives are untrusted input: the one place that extracts or reads them (AllenNLP's
`model.tar.gz`, and biLMs published as `.zip` / `.tar.gz`: NLPL / simple_elmo, SeqVec).

`extract_archive` checks every member before anything is written and refuses, with one line
naming the archive and the member: absolute paths, `..` components, symbolic and hard links whose
target is outside the archive or another link, members below a link, device files, FIFOs or other
special members, and (zip) symbolic links of any kind. Tar archives are then extracted with
Python's `tarfile` data filter (PEP 706) as a second guard; zip members are written one by one
to their checked names. An archive declaring more than `MAX_EXTRACTED_BYTES` is refused before
anything is written. The plugin routes AllenNLP's own `extracted_archive` (behind `load_archive`,
`from_archive` models and the pretrained-model initialiser) through `extracted_archive` below
(hook 6 of `elmo_plugin.hooks`).
"""

import contextlib
import fnmatch
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import IO, Iterator, List, Optional, Sequence, Set, Tuple

from elmo_bilm.utils.files import FormatError, PathLike, sha256_files

# what opening or reading a damaged archive raises
READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, zlib.error)
# ten times the largest published ELMo's files (the 5.5B biLM's weights: under 400 MB)
MAX_EXTRACTED_BYTES = 4 * 2**30


def _normal(name: str) -> str:
    """A member name without `./` prefixes or trailing slashes (`..` kept)."""
    return posixpath.normpath(name) if name not in ("", ".") else "."


def _is_absolute(name: str) -> bool:
    return name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) is not None


def _outside(name: str) -> bool:
    """Whether a normalised relative `name` leaves the extraction folder."""
    return name == ".." or name.startswith("../")


def _refusal(member: tarfile.TarInfo, links: Set[str]) -> Optional[str]:
    """Why `member` must not be extracted, or None; `links` are the archive's link members."""
    name = member.name
    if _is_absolute(name):
        return "has an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "has a '..' component"
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
    for member in members:
        reason = _refusal(member, links)
        if reason is not None:
            raise FormatError(
                f"{archive_file}: member {member.name!r} {reason}; refusing to extract the archive"
            )


def _members(archive_file: PathLike, tar: tarfile.TarFile) -> List[tarfile.TarInfo]:
    try:
        return tar.getmembers()
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


def _check_size(archive_file: PathLike, sizes: List[int]) -> None:
    if sum(sizes) > MAX_EXTRACTED_BYTES:
        raise FormatError(
            f"{archive_file}: its members declare {sum(sizes):,} bytes, more than any ELMo model "
            f"needs ({MAX_EXTRACTED_BYTES:,}); refusing to extract the archive"
        )


def _zip_refusal(info: zipfile.ZipInfo) -> Optional[str]:
    """Why the zip member `info` must not be extracted, or None."""
    name = info.filename
    if _is_absolute(name):
        return "has an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "has a '..' component"
    mode = info.external_attr >> 16  # Unix mode where the writer set one; no type bits: a file
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is not a regular file or folder"
    return None


def _extract_zip(archive_file: PathLike, target: PathLike) -> None:
    try:
        with zipfile.ZipFile(archive_file) as archive:
            infos = archive.infolist()
            for info in infos:
                reason = _zip_refusal(info)
                if reason is not None:
                    raise FormatError(
                        f"{archive_file}: member {info.filename!r} {reason}; refusing to "
                        "extract the archive"
                    )
            _check_size(archive_file, [info.file_size for info in infos])
            for info in infos:
                path = os.path.join(os.fspath(target), _normal(info.filename))
                if info.is_dir():
                    os.makedirs(path, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with archive.open(info) as source, open(path, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except READ_ERRORS as error:
        if isinstance(error, FormatError):
            raise
        raise FormatError(
            f"{archive_file}: extracting failed (truncated or damaged? {error})"
        ) from error


def extract_archive(archive_file: PathLike, target: PathLike) -> None:
    """Extract the tar or zip archive `archive_file` into the folder `target`, after checking
    every member (nothing is written when one is refused); tar members then with the `data`
    filter."""
    if zipfile.is_zipfile(archive_file):
        _extract_zip(archive_file, target)
        return
    with _open(archive_file) as tar:
        members = _members(archive_file, tar)
        check_members(archive_file, members)
        _check_size(archive_file, [m.size for m in members if m.isreg()])
        try:
            tar.extractall(target, filter="data")
        except tarfile.FilterError as error:
            name = error.tarinfo.name
            raise FormatError(
                f"{archive_file}: member {name!r} refused by the tar data filter ({error})"
            ) from error
        except READ_ERRORS as error:
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
        extract_archive(resolved_archive_file, tempdir)
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
    return isinstance(name, str) and name.lower().split("?")[0].endswith(BILM_ARCHIVE_SUFFIXES)


def unpacked(archive_file: PathLike, cache: Path) -> Path:
    """The folder `cache/unpacked/DIGEST` holding `archive_file` extracted (once per content:
    extracted into a hidden folder beside it, then renamed, so no half-extracted folder is ever
    taken for a complete one)."""
    folder = cache / "unpacked" / sha256_files([archive_file])[:16]
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        extract_archive(archive_file, partial)
        os.rename(partial, folder)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if folder.is_dir():  # another process unpacked the same archive meanwhile
            return folder
        raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
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


def bilm_files_in(folder: PathLike, source: str, options_only: bool = False) -> Tuple[str, str]:
    """The options and weights of the bilm-tf biLM in `folder` (searched recursively):
    `options.json` or the one `*options*.json`; `weights.hdf5`, `model.hdf5` (NLPL /
    simple_elmo) or the one `*weights*.hdf5` or `*.hdf5` (`options_only`: the options alone, the
    weights "" ). Errors name `source`, the archive or repository the folder came from."""
    files = sorted(path for path in Path(folder).rglob("*") if path.is_file())
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
