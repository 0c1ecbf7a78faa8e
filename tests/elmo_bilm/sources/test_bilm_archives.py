"""biLMs published as archives load directly: NLPL / simple_elmo zips (`options.json`,
`model.hdf5`, `vocab.txt`), SeqVec's nested zip, a packed bilm-tf folder, a packed TensorFlow
checkpoint; by path or URL (a local server on 127.0.0.1), unpacked once into the cache, member
names checked."""

import stat
import tarfile
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from elmo_bilm.utils.files import FormatError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.local_server import LocalServer

SENTENCES = [["The", "cat", "sat", "."], ["Hello", "!"]]
CHECKPOINT = REPO_ROOT / "fixtures" / "tf_checkpoint" / "save_dir"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def reference() -> torch.Tensor:
    elmo = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 1, dropout=0.0)
    return elmo(batch_to_ids(SENTENCES))["elmo_representations"][0]


def vectors(name: str) -> torch.Tensor:
    return Elmo(name, None, 1, dropout=0.0)(batch_to_ids(SENTENCES))["elmo_representations"][0]


def nlpl_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:  # the layout of NLPL's repository zips
        archive.write(OPTIONS_FILE, "options.json")
        archive.write(WEIGHT_FILE, "model.hdf5")
        archive.writestr("vocab.txt", "<S>\n</S>\n<UNK>\nthe\n")
        archive.writestr("meta.json", '{"id": 0, "corpus": "test"}')
    return path


def test_an_nlpl_zip_loads_and_is_unpacked_once(tmp_path: Path, cache: Path) -> None:
    archive = nlpl_zip(tmp_path / "210.zip")
    assert torch.equal(vectors(str(archive)), reference())
    assert len(list((cache / "unpacked").iterdir())) == 1
    assert torch.equal(vectors(str(archive)), reference())  # from the unpacked folder
    assert len(list((cache / "unpacked").iterdir())) == 1


def test_a_seqvec_style_nested_tar_gz_loads_in_elmo_embedder(tmp_path: Path) -> None:
    archive = tmp_path / "seqvec.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(OPTIONS_FILE, "uniref50_v2/options.json")
        tar.add(WEIGHT_FILE, "uniref50_v2/weights.hdf5")
    got = ElmoEmbedder(str(archive)).embed_sentence(SENTENCES[0])
    expected = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(SENTENCES[0])
    assert (got == expected).all()


def test_a_packed_tensorflow_checkpoint_is_converted_once(tmp_path: Path, cache: Path) -> None:
    archive = tmp_path / "nlpl_tf.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for path in CHECKPOINT.iterdir():
            if path.name != "checkpoint":  # the index alone names it
                packed.write(path, f"model/{path.name}")
    # the fixture checkpoint holds the tiny biLM's weights (fixtures/tf_checkpoint/README.md)
    assert torch.equal(vectors(str(archive)), reference())
    (folder,) = (cache / "unpacked").iterdir()
    assert not list(folder.rglob("*.hdf5"))  # the conversion lives outside the unpacked folder
    (converted,) = (cache / "converted").iterdir()
    assert (converted / "weights.hdf5").is_file()
    # a second run (a new process would do the same) finds the same archive as it was first
    assert torch.equal(vectors(str(archive)), reference())
    assert len(list((cache / "converted").iterdir())) == 1


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def test_an_archive_by_url_is_downloaded_then_unpacked(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    nlpl_zip(served / "model.zip")
    server = LocalServer.started(partial(QuietFiles, directory=str(served)))
    try:
        assert torch.equal(vectors(f"{server.url}/model.zip"), reference())
    finally:
        server.stop()


def test_an_archive_with_two_weight_files_names_them(tmp_path: Path) -> None:
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.write(OPTIONS_FILE, "options.json")
        packed.write(WEIGHT_FILE, "a.hdf5")
        packed.write(WEIGHT_FILE, "b.hdf5")
    with pytest.raises(FormatError, match=r"two.zip: more than one weights file .*a.hdf5.*b.hdf5"):
        vectors(str(archive))


def _zip_with(path: Path, name: str, data: bytes = b"pwned", mode: int = 0) -> Path:
    with zipfile.ZipFile(path, "w") as packed:
        packed.write(OPTIONS_FILE, "options.json")
        info = zipfile.ZipInfo(name)
        if mode:
            info.external_attr = mode << 16
        packed.writestr(info, data)
    return path


@pytest.mark.parametrize(
    "member, mode, reason",
    [
        ("../../evil.txt", 0, "has a '..' component"),
        ("/tmp/evil-elmo-test.txt", 0, "has an absolute path"),
        ("link", stat.S_IFLNK | 0o777, "is a symbolic link"),
        ("fifo", stat.S_IFIFO | 0o644, "is not a regular file or folder"),
    ],
)
def test_a_malicious_zip_is_refused_in_one_line_and_writes_nothing(
    tmp_path: Path, cache: Path, member: str, mode: int, reason: str
) -> None:
    archive = _zip_with(tmp_path / "evil.zip", member, b"/etc/passwd" if mode else b"pwned", mode)
    with pytest.raises(FormatError) as raised:
        vectors(str(archive))
    message = str(raised.value)
    assert message == f"{archive}: member {member!r} {reason}; refusing to extract the archive"
    assert not (tmp_path.parent / "evil.txt").exists()
    assert not Path("/tmp/evil-elmo-test.txt").exists()
    assert list((cache / "unpacked").iterdir()) == []  # nothing half-extracted left behind


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_declaring_more_than_any_model_needs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path, kind: str
) -> None:
    monkeypatch.setattr(
        "elmo_bilm.sources.archives.MAX_EXTRACTED_BYTES", 100_000
    )  # the fixture: 450 kB
    archive = tmp_path / f"big.{kind}"
    if kind == "zip":
        nlpl_zip(archive)
    else:
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(OPTIONS_FILE, "options.json")
            tar.add(WEIGHT_FILE, "weights.hdf5")
    with pytest.raises(FormatError, match=r"declare [\d,]+ bytes, more than any ELMo model needs"):
        vectors(str(archive))
    assert list((cache / "unpacked").iterdir()) == []


def test_three_processes_loading_a_packed_checkpoint_at_once_agree(
    tmp_path: Path, cache: Path
) -> None:
    """Issue 67: one of three processes loading an archive holding a TensorFlow checkpoint at
    once failed ("more than one options file"); each unpacks and converts into a hidden folder
    and renames it, so all three load, and the cache holds one of each."""
    import subprocess
    import sys

    archive = tmp_path / "nlpl_tf.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for path in CHECKPOINT.iterdir():
            packed.write(path, f"model/{path.name}")
    code = (
        "import sys\n"
        "from elmo_bilm import ElmoEmbedder\n"
        "print(float(ElmoEmbedder(sys.argv[1]).embed_sentence(['The', 'cat']).sum()))\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(archive)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [process.communicate(timeout=600) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], [r[1] for r in results]
    assert len({out for out, _ in results}) == 1
    assert len(list((cache / "unpacked").iterdir())) == 1
    assert len(list((cache / "converted").iterdir())) == 1
