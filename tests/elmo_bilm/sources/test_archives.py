"""Model archives are untrusted: no member writes outside the extraction folder (issue 55, 1)."""

import io
import tarfile
import tempfile
from pathlib import Path
from typing import Callable, Dict

import pytest

from elmo_bilm.utils.files import FormatError
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive


def _file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)  # set directly: `add` would strip a leading "/"
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _link(tar: tarfile.TarFile, name: str, target: str, kind: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    tar.addfile(info)


def _archive(path: Path, build: Callable[[tarfile.TarFile], None]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        _file(tar, "config.json", b'{"model": {"type": "elmo_plugin_bilm"}}')
        build(tar)
    return path


# Each case: (member refused, how to build it given the folder outside the extraction).
# The extraction folder is TMP/tmpXXXX (`tempfile.tempdir` = TMP), so `../../` is `outside`'s
# parent, tmp_path.
CASES: Dict[str, Callable[[Path], Callable[[tarfile.TarFile], None]]] = {
    "dotdot": lambda out: lambda tar: _file(tar, "../../evil.txt", b"pwned"),
    "absolute": lambda out: lambda tar: _file(tar, str(out.parent / "evil.txt"), b"pwned"),
    "symlink": lambda out: (
        lambda tar: (
            _link(tar, "sub", str(out), tarfile.SYMTYPE),
            _file(tar, "sub/evil.txt", b"pwned"),
        )
    ),
    "relative_symlink": lambda out: (
        lambda tar: (
            _link(tar, "sub", "../../outside", tarfile.SYMTYPE),
            _file(tar, "sub/evil.txt", b"pwned"),
        )
    ),
    "hardlink": lambda out: (
        lambda tar: (
            _link(tar, "victim", str(out / "victim.txt"), tarfile.LNKTYPE),
            _file(tar, "victim", b"pwned"),
        )
    ),
}
REFUSED = {
    "dotdot": "../../evil.txt",
    "absolute": "evil.txt",
    "symlink": "sub",
    "relative_symlink": "sub",
    "hardlink": "victim",
}


def _outside_untouched(tmp_path: Path) -> None:
    assert not (tmp_path / "evil.txt").exists()
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["victim.txt"]
    assert (tmp_path / "outside" / "victim.txt").read_bytes() == b"precious"
    assert list((tmp_path / "tmp").iterdir()) == []  # no temporary folder left behind


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside any extraction, holding an unrelated file; extractions go below TMP."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.txt").write_bytes(b"precious")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "outside"


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malicious_archive_writes_nothing_outside_and_names_the_member(
    tmp_path: Path, outside: Path, case: str
) -> None:
    archive = _archive(tmp_path / f"{case}.tar.gz", CASES[case](outside))
    with pytest.raises(FormatError, match=r"\.tar\.gz: member '.*") as error:
        load_bilm_or_archive(archive_file=str(archive))
    message = str(error.value)
    assert "\n" not in message and str(archive) in message and REFUSED[case] in message
    _outside_untouched(tmp_path)


def test_allennlps_own_load_archive_extracts_through_the_checks(
    tmp_path: Path, outside: Path
) -> None:
    from allennlp.models.archival import load_archive

    import elmo_plugin  # noqa: F401  (installs the hook)

    archive = _archive(tmp_path / "a.tar.gz", CASES["dotdot"](outside))
    with pytest.raises(FormatError, match=r"member '\.\./\.\./evil\.txt' has a '\.\.' component"):
        load_archive(str(archive))
    _outside_untouched(tmp_path)


def test_device_files_and_fifos_are_refused(tmp_path: Path) -> None:
    from elmo_bilm.sources.archives import extract_archive

    for kind in (tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE):
        archive = _archive(
            tmp_path / "dev.tar.gz", lambda tar, kind=kind: _link(tar, "dev", "", kind)
        )
        with pytest.raises(FormatError, match=r"member 'dev' is a device file or FIFO"):
            extract_archive(archive, tmp_path / "target")
    assert not (tmp_path / "target").exists() or list((tmp_path / "target").iterdir()) == []


def test_links_inside_the_archive_extract(tmp_path: Path) -> None:
    from elmo_bilm.sources.archives import extract_archive, open_member

    def build(tar: tarfile.TarFile) -> None:
        _file(tar, "vocabulary/tokens.txt", b"a\n")
        _link(tar, "vocabulary/same.txt", "tokens.txt", tarfile.SYMTYPE)
        _link(tar, "hard.txt", "vocabulary/tokens.txt", tarfile.LNKTYPE)

    archive = _archive(tmp_path / "ok.tar.gz", build)
    extract_archive(archive, tmp_path / "target")
    assert (tmp_path / "target" / "vocabulary" / "same.txt").read_bytes() == b"a\n"
    assert (tmp_path / "target" / "hard.txt").read_bytes() == b"a\n"
    with open_member(archive, "./vocabulary/tokens.txt") as member:
        assert member is not None and member.read() == b"a\n"
    with open_member(archive, "missing.txt") as member:
        assert member is None


def test_a_link_to_a_link_is_refused(tmp_path: Path) -> None:
    from elmo_bilm.sources.archives import extract_archive

    def build(tar: tarfile.TarFile) -> None:
        _link(tar, "a", ".", tarfile.SYMTYPE)
        _link(tar, "b", "a", tarfile.SYMTYPE)

    archive = _archive(tmp_path / "chain.tar.gz", build)
    with pytest.raises(FormatError, match=r"member 'a' is a symbolic link to \., a link or"):
        extract_archive(archive, tmp_path / "target")
