"""AllenNLP model archives (`model.tar.gz`) are untrusted input: the one place that extracts or
reads them.

`extract_archive` checks every member before anything is written and refuses, with one line
naming the archive and the member: absolute paths, `..` components, symbolic and hard links whose
target is outside the archive or another link, members below a link, and device files, FIFOs or
other special members. It then extracts with Python's `tarfile` data filter (PEP 706) as a second
guard. AllenNLP's own `extracted_archive` (behind `load_archive`, `from_archive` models and the
pretrained-model initialiser) is replaced by `extracted_archive` below (hook 6 of
`elmo_plugin.hooks`), so `allennlp evaluate`/`predict` with the plugin extract safely too.
"""

import contextlib
import posixpath
import re
import shutil
import tarfile
import tempfile
import zlib
from typing import IO, Iterator, List, Optional, Set

from elmo_bilm.files import FormatError, PathLike

# what opening or reading a damaged archive raises
READ_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)


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


def extract_archive(archive_file: PathLike, target: PathLike) -> None:
    """Extract the tar archive `archive_file` into the folder `target`, after checking every
    member (nothing is written when one is refused); then with the `data` filter."""
    with _open(archive_file) as tar:
        check_members(archive_file, _members(archive_file, tar))
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


def install() -> None:
    """Route AllenNLP's archive extraction through `extracted_archive` (idempotent)."""
    from allennlp.models import archival

    archival.extracted_archive = extracted_archive  # type: ignore[assignment]
