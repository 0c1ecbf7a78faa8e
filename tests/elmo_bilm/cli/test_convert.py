"""`elmo-convert` on sources other than TensorFlow checkpoints (those: test_tf_checkpoint.py):
an archive's biLM written as bilm-tf files; ELMoForManyLangs refused in one line."""

import zipfile
from pathlib import Path

import pytest
import torch

from elmo_bilm import Elmo, batch_to_ids
from elmo_bilm.cli import convert
from elmo_bilm.cli.convert import main
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

SENTENCES = [["The", "cat", "sat", "."], ["Hi"]]


def top(options: str, weights: str) -> torch.Tensor:
    elmo = Elmo(options, weights, 1, dropout=0.0, scalar_mix_parameters=[-9e10, -9e10, 0.0])
    return elmo(batch_to_ids(SENTENCES))["elmo_representations"][0]


def test_an_archive_is_written_as_bilm_tf_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    archive = tmp_path / "nlpl.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.write(OPTIONS_FILE, "options.json")
        packed.write(WEIGHT_FILE, "model.hdf5")
    assert main([str(archive), str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert (out / "weights.hdf5").read_bytes() == WEIGHT_FILE.read_bytes()
    assert torch.equal(
        top(str(out / "options.json"), str(out / "weights.hdf5")),
        top(str(OPTIONS_FILE), str(WEIGHT_FILE)),
    )
    with pytest.raises(SystemExit):  # an existing output: one line, exit 1
        main([str(archive), str(out)])
    assert main([str(archive), str(out), "--overwrite"]) == 0


def test_an_elmoformanylangs_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = REPO_ROOT / "fixtures" / "elmoformanylangs" / "word8"
    with pytest.raises(SystemExit) as raised:  # the message is what the process prints, exit 1
        main([str(folder), str(tmp_path / "out")])
    error = str(raised.value.code)
    assert error.startswith("elmo-convert: error:") and "ELMoForManyLangs" in error
    assert "\n" not in error and not (tmp_path / "out").exists()


def test_checkpoint_flags_on_another_source_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["small", str(tmp_path / "out"), "--softmax-in-weights"])
    assert "for TensorFlow checkpoints" in str(raised.value.code)


def _source(tmp_path: Path) -> Path:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "options.json").write_bytes(OPTIONS_FILE.read_bytes())
    (folder / "weights.hdf5").write_bytes(WEIGHT_FILE.read_bytes())
    return folder


def test_an_empty_output_folder_is_one_line_before_the_source_is_resolved(
    tmp_path: Path, monkeypatch
) -> None:
    """`elmo-convert SRC ''` was os.makedirs' "[Errno 2] No such file or directory: ''", after
    the source was resolved (a download, an unpacking)."""
    resolved = []
    monkeypatch.setattr(convert, "resolve_bilm", lambda *a: resolved.append(a))
    with pytest.raises(SystemExit) as exit_:
        main([str(_source(tmp_path)), ""])
    assert "empty path" in str(exit_.value.code) and "\n" not in str(exit_.value.code)
    assert not resolved


def test_a_dangling_link_as_output_is_refused_before_the_copy(tmp_path: Path, monkeypatch) -> None:
    """A dangling `out/weights.hdf5` link was refused only after both files were copied
    ("appeared while this process wrote it"); a dangling link as the folder is one line."""
    source, out = _source(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "weights.hdf5").symlink_to(tmp_path / "nowhere")
    copies = []
    monkeypatch.setattr(convert.shutil, "copyfile", lambda *a: copies.append(a))
    with pytest.raises(SystemExit) as exit_:
        main([str(source), str(out)])
    assert "a link to nowhere" in str(exit_.value.code) and not copies
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    with pytest.raises(SystemExit) as exit_:
        main([str(source), str(tmp_path / "link")])
    assert "a link to nowhere" in str(exit_.value.code) and not copies
