"""`elmo-plugin elmo-export`: the archive and the output are checked before the model loads."""

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from elmo_plugin.commands import elmo_export
from elmo_plugin.commands.elmo_export import export_archive


@pytest.fixture
def no_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the archive was loaded before the checks")

    monkeypatch.setattr(elmo_export, "load_archive", refuse)


def test_a_zip_holding_only_a_config_is_not_an_archive(tmp_path: Path, no_load: None) -> None:
    """Was an AttributeError from inside AllenNLP."""
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("config.json", "{}")
    with pytest.raises(ValueError, match="not an AllenNLP model archive") as error:
        export_archive(str(archive), str(tmp_path / "out"))
    assert "\n" not in str(error.value)


def test_a_tar_without_weights_names_what_it_holds(tmp_path: Path, no_load: None) -> None:
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        info = tarfile.TarInfo("config.json")
        info.size = 2
        handle.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(ValueError, match=r"no weights\.th \(it holds config\.json"):
        export_archive(str(archive), str(tmp_path / "out"))


def test_an_output_holding_an_export_is_refused_before_loading(
    tmp_path: Path, no_load: None
) -> None:
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        for name in ("config.json", "weights.th"):
            info = tarfile.TarInfo(name)
            info.size = 2
            handle.addfile(info, io.BytesIO(b"{}"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "weights.hdf5").write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="not overwriting"):
        export_archive(str(archive), str(out))
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        export_archive(str(archive), str(tmp_path / "file"))


def test_a_missing_archive_is_one_line(tmp_path: Path, no_load: None) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        export_archive(str(tmp_path / "missing.tar.gz"), str(tmp_path / "out"))
