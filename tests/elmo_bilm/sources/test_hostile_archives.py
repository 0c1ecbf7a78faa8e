"""Hostile biLM archives (issue 67): each is refused in one line naming the archive (and member)
before its disk is taken, and leaves nothing in the cache; a killed unpacking's leftovers are
cleared by the next one. Every archive is built small here."""

import gzip
import io
import os
import re
import struct
import subprocess
import sys
import tarfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Callable, List, Tuple

import pytest

from elmo_bilm.sources import archives
from elmo_bilm.sources.archives import unpacked
from elmo_bilm.sources.resolver import _in_folder
from elmo_bilm.utils.files import FormatError, sha256_files

GIB = 2**30


def _tar(path: Path, members: List[Tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, members: List[Tuple[str, bytes]]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a duplicate name
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as packed:
            for name, data in members:
                packed.writestr(name, data)
    return path


def _raw_zip(path: Path, name: bytes, data: bytes, declared: int) -> Path:
    """A zip of one deflated member written byte by byte, so that its name and declared size can
    be what `zipfile` would refuse to write (an empty name; a size that lies)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(data) + packer.flush()
    crc = zlib.crc32(data)
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(packed), declared, len(name), 0
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII",
        *(0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(packed), declared, len(name)),
        *(0, 0, 0, 0, 0, 0),
    )
    body = local + name + packed
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central) + len(name), len(body), 0)
    path.write_bytes(body + central + name + end)
    return path


def _left_in(cache: Path) -> List[str]:
    """What is in the cache's unpacked folder (hidden partial folders included)."""
    folder = cache / "unpacked"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _refused(archive: Path, cache: Path, match: str, **kwargs: Callable[[Path], object]) -> str:
    """Unpack `archive`, expecting one line matching `match` that names it and nothing left."""
    with pytest.raises(FormatError, match=match) as raised:
        unpacked(archive, cache, **kwargs)
    message = str(raised.value)
    assert message.startswith(f"{archive}: ") and "\n" not in message
    assert _left_in(cache) == []
    return message


# ---- 1. a sparse member: a few hundred bytes declaring gigabytes


def _sparse_tar(path: Path, apparent: int) -> Path:
    """A .tar.gz whose one member is a GNU sparse file (PAX format 1.0) of `apparent` bytes, five
    of them stored: tarfile extracts it at its full apparent size."""
    data = b"hello"
    sparse_map = f"1\n0\n{len(data)}\n".encode().ljust(tarfile.BLOCKSIZE, b"\0")
    info = tarfile.TarInfo("GNUSparseFile.0/weights.hdf5")
    info.size = len(sparse_map) + len(data)
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": "weights.hdf5",
        "GNU.sparse.realsize": str(apparent),
    }
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(sparse_map + data))
    return path


def test_a_sparse_member_declaring_gigabytes_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    archive = _sparse_tar(tmp_path / "sparse.tar.gz", int(3.5 * GIB))
    assert archive.stat().st_size < 1000
    message = _refused(archive, tmp_path / "cache", "more than any ELMo model needs")
    assert message == (
        f"{archive}: its members declare 3,758,096,384 bytes, more than any ELMo model needs "
        f"(2,147,483,648; the largest, member 'weights.hdf5', 3,758,096,384); refusing to "
        "extract the archive"
    )


def test_a_member_declaring_more_than_the_archive_holds_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("weights.hdf5")
    info.size = 3 * GIB  # the header's word; five bytes follow
    header = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    archive = tmp_path / "short.tar.gz"
    archive.write_bytes(gzip.compress(header + b"hello".ljust(2048, b"\0")))
    _refused(archive, tmp_path / "cache", r"not a readable .*unexpected end of data")


def test_a_sparse_member_within_the_budget_extracts(tmp_path: Path) -> None:
    archive = _sparse_tar(tmp_path / "small-sparse.tar.gz", 1 << 20)
    folder = unpacked(archive, tmp_path / "cache")
    assert (folder / "weights.hdf5").stat().st_size == 1 << 20
    assert (folder / "weights.hdf5").read_bytes()[:5] == b"hello"


# ---- 2. zip bombs, and archives holding no biLM


def test_a_zip_bomb_declaring_its_size_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_EXTRACTED_BYTES", 100_000)
    archive = _zip(tmp_path / "bomb.zip", [("options.json", b"{}"), ("zeros", bytes(300_000))])
    assert archive.stat().st_size < 2_000
    _refused(archive, tmp_path / "cache", r"declare 300,002 bytes, .*member 'zeros', 300,000\)")


def test_a_zip_bomb_lying_about_its_size_stops_at_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_EXTRACTED_BYTES", 100_000)
    archive = _raw_zip(tmp_path / "liar.zip", b"zeros", bytes(300_000), declared=1_000)
    assert zipfile.ZipFile(archive).infolist()[0].file_size == 1_000
    # zipfile itself stops a member at its declared size and then finds the CRC wrong
    _refused(archive, tmp_path / "cache", r"extracting failed .*'zeros'")


def test_bytes_written_are_counted_against_the_budget() -> None:
    """The count that stops a zip reader not bounded by the declared sizes (the guard behind the
    declared sizes), seen on the copy itself."""
    out = io.BytesIO()
    with pytest.raises(FormatError, match=r"^a.zip: member 'zeros' decompresses past 100,000"):
        archives._copy_counted("a.zip", "zeros", io.BytesIO(bytes(300_000)), out, 0, 100_000)
    assert len(out.getvalue()) <= 100_000
    copied = archives._copy_counted("a.zip", "z", io.BytesIO(bytes(50_000)), out, 40_000, 100_000)
    assert copied == 90_000


def test_an_archive_holding_no_bilm_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "junk.zip", [("junk/zeros.bin", bytes(50_000))])
    source = str(archive)
    message = _refused(
        archive,
        tmp_path / "cache",
        "no options file",
        contains=lambda folder: _in_folder("archive", source, folder),
    )
    assert message.endswith("it holds junk/zeros.bin")


def test_errors_of_the_check_name_members_not_the_removed_folder(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "two.zip", [("options.json", b"{}"), ("a.hdf5", b"a"), ("b.hdf5", b"b")]
    )
    source = str(archive)
    message = _refused(
        archive,
        tmp_path / "cache",
        "more than one weights file",
        contains=lambda folder: _in_folder("archive", source, folder),
    )
    assert "(*.hdf5): a.hdf5, b.hdf5;" in message and str(tmp_path / "cache") not in message


def test_an_archive_passing_the_check_is_kept(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "ok.zip", [("options.json", b"{}"), ("weights.hdf5", b"w")])
    seen: List[Path] = []
    folder = unpacked(archive, tmp_path / "cache", contains=seen.append)
    assert (folder / "weights.hdf5").read_bytes() == b"w"
    assert _left_in(tmp_path / "cache") == [folder.name]
    digest = sha256_files([archive])[:16]
    assert re.fullmatch(rf"\.{digest}\.{os.getpid()}\.\w+", seen[0].name)  # the owner's pid


# ---- 3. too many members


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_too_many_members_are_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(archives, "MAX_MEMBERS", 5)
    build = _tar if kind == "tar.gz" else _zip
    archive = build(tmp_path / f"many.{kind}", [(f"empty{i}", b"") for i in range(8)])
    message = _refused(archive, tmp_path / "cache", "more than 5 members")
    assert message == (
        f"{archive}: more than 5 members (a model archive holds a handful); refusing to extract "
        "the archive"
    )
    five = build(tmp_path / f"five.{kind}", [(f"empty{i}", b"") for i in range(5)])
    assert len(list(unpacked(five, tmp_path / "cache").iterdir())) == 5


# ---- 4. deep names; 5. empty names; 6. duplicates


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_a_member_a_thousand_folders_deep_is_refused(tmp_path: Path, kind: str) -> None:
    deep = "/".join(["d"] * 1000) + "/weights.hdf5"
    build = _tar if kind == "tar.gz" else _zip
    archive = build(tmp_path / f"deep.{kind}", [(deep, b"w")])
    message = _refused(archive, tmp_path / "cache", "has 1,001 path components")
    assert message.endswith(
        f"'{deep}' has 1,001 path components (at most 32); refusing to extract the archive"
    )
    nested = "/".join(["d"] * 31) + "/weights.hdf5"  # 32 components: the most allowed
    folder = unpacked(build(tmp_path / f"nested.{kind}", [(nested, b"w")]), tmp_path / "cache")
    assert (folder / nested).read_bytes() == b"w"


def test_a_zip_member_with_an_empty_name_is_refused(tmp_path: Path) -> None:
    archive = _raw_zip(tmp_path / "empty.zip", b"", b"w", declared=1)
    message = _refused(archive, tmp_path / "cache", "empty name")
    assert message == f"{archive}: member '' has an empty name; refusing to extract the archive"


def test_a_tar_file_member_with_an_empty_name_is_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "empty.tar.gz", [("./", b"w")])
    _refused(archive, tmp_path / "cache", r"member '\./' has an empty name")


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
@pytest.mark.parametrize("second", ["weights.hdf5", "./weights.hdf5"])
def test_a_member_named_twice_is_refused(tmp_path: Path, kind: str, second: str) -> None:
    build = _tar if kind == "tar.gz" else _zip
    members = [("weights.hdf5", b"first"), ("options.json", b"{}"), (second, b"second")]
    archive = build(tmp_path / f"twice.{kind}", members)
    message = _refused(archive, tmp_path / "cache", "appears twice")
    also = "" if second == "weights.hdf5" else " (also as 'weights.hdf5')"
    assert message == (
        f"{archive}: member {second!r} appears twice in the archive{also}; refusing to extract "
        "the archive"
    )


def test_a_folder_listed_twice_is_harmless(tmp_path: Path) -> None:
    archive = tmp_path / "folders.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("model", "model/"):
            folder = tarfile.TarInfo(name)
            folder.type = tarfile.DIRTYPE
            tar.addfile(folder)
    assert unpacked(archive, tmp_path / "cache").joinpath("model").is_dir()


# ---- 7. a killed unpacking's hidden folder


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def test_a_dead_unpackers_partial_folder_is_removed_by_the_next_unpacking(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "ok.zip", [("options.json", b"{}"), ("weights.hdf5", b"w")])
    cache = tmp_path / "cache"
    digest = sha256_files([archive])[:16]
    dead = cache / "unpacked" / f".{digest}.{_dead_pid()}.x1y2z3"
    other_dead = cache / "unpacked" / f".0123456789abcdef.{_dead_pid()}.a1b2c3"
    alive = cache / "unpacked" / f".{digest}.{os.getppid()}.q1w2e3"  # a live process's
    for partial in (dead, other_dead, alive):
        (partial / "sub").mkdir(parents=True)
        (partial / "sub" / "half.hdf5").write_bytes(b"half")
    folder = unpacked(archive, cache)
    assert (folder / "weights.hdf5").read_bytes() == b"w"
    assert _left_in(cache) == sorted([digest, alive.name])


# --- issue 79: a damaged cache entry is rebuilt; the cache, not the archive, is blamed -------


def _bilm_zip(tmp_path: Path) -> Path:
    return _zip(tmp_path / "bilm.zip", [("options.json", b"{}"), ("weights.hdf5", b"w" * 4096)])


@pytest.mark.parametrize("damage", ["truncated", "removed", "no record"])
def test_a_damaged_cache_entry_is_rebuilt(tmp_path, damage):
    archive = _bilm_zip(tmp_path)
    cache = tmp_path / "cache"
    folder = unpacked(archive, cache)
    record = cache / archives.SIZES_FOLDER / f"{folder.name}.json"
    assert record.is_file() and _left_in(cache) == [folder.name]
    if damage == "truncated":
        os.truncate(folder / "weights.hdf5", 100)
    elif damage == "removed":
        (folder / "weights.hdf5").unlink()
    else:  # an entry of an older version, or one whose writer died before recording it
        record.unlink()
    again = unpacked(archive, cache)
    assert again == folder and (again / "weights.hdf5").read_bytes() == b"w" * 4096
    assert _left_in(cache) == [folder.name] and record.is_file()


def test_a_damaged_entry_that_cannot_be_rebuilt_blames_the_cache(tmp_path, monkeypatch):
    archive = _bilm_zip(tmp_path)
    cache = tmp_path / "cache"
    folder = unpacked(archive, cache)
    os.truncate(folder / "weights.hdf5", 100)

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied (simulated)")

    monkeypatch.setattr(archives, "extract_archive", read_only)
    with pytest.raises(OSError) as raised:
        unpacked(archive, cache)
    message = str(raised.value)
    assert "\n" not in message and not isinstance(raised.value, FormatError)
    assert str(folder) in message and "ELMO_BILM_CACHE" in message
    assert "weights.hdf5 has 100 bytes, 4,096 when unpacked" in message
    assert "the archive is not at fault" in message


def test_a_full_disk_while_unpacking_says_so(tmp_path, monkeypatch):
    archive = _bilm_zip(tmp_path)
    cache = tmp_path / "cache"

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(archives, "_copy_counted", full)
    with pytest.raises(OSError) as raised:
        unpacked(archive, cache)
    message = str(raised.value)
    assert not isinstance(raised.value, FormatError) and "\n" not in message
    assert "the disk is full" in message and "truncated or damaged" not in message
    assert str(archive) in message and "ELMO_BILM_CACHE" in message
    assert _left_in(cache) == []
