import json
import os
import subprocess
import sys

import h5py
import numpy
import pytest
import torch
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm import load_bilm_tf
from elmo_plugin.commands.elmo_embed import embed_sentences, read_sentences
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def allennlp(*args, cwd):
    command = [os.path.join(os.path.dirname(sys.executable), "allennlp"), *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def bilm():
    return load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()


@pytest.mark.slow
def test_cli_writes_documented_file(tmp_path, repo_root, fixture_sentences, bilm):
    sentences = fixture_sentences[0][:5] + [["Single"]]
    (tmp_path / "in.txt").write_text("\n".join(" ".join(s) for s in sentences) + "\n")
    result = allennlp(
        "elmo-embed",
        tmp_path / "in.txt",
        tmp_path / "out.hdf5",
        "--options-file",
        OPTIONS_FILE,
        "--weight-file",
        WEIGHT_FILE,
        "--batch-size",
        4,
        "--include-package",
        "elmo_plugin",
        cwd=repo_root,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "elmo-embed" in result.stderr and "2/2" in result.stderr
    )  # progress bar: 6 sentences, batches of 4
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert set(out.keys()) == {str(i) for i in range(6)} | {"sentence_to_index"}
        index = json.loads(out["sentence_to_index"][()])
        assert index[" ".join(sentences[2])] == "2"
        for i, sentence in enumerate(sentences):
            stored = out[str(i)][...]
            assert stored.shape == (3, len(sentence), 32)
            with torch.no_grad():
                alone = torch.stack(bilm(batch_to_ids([sentence]))["activations"])[:, 0].numpy()
            numpy.testing.assert_allclose(stored, alone, atol=1e-5)


@pytest.mark.slow
def test_cli_empty_line_error_names_line_and_writes_nothing(tmp_path, repo_root):
    (tmp_path / "in.txt").write_text("a sentence\n\nanother one\n")
    result = allennlp(
        "elmo-embed",
        tmp_path / "in.txt",
        tmp_path / "out.hdf5",
        "--options-file",
        OPTIONS_FILE,
        "--weight-file",
        WEIGHT_FILE,
        cwd=repo_root,
    )
    assert result.returncode != 0
    assert "in.txt:2: empty line" in result.stderr
    assert not (tmp_path / "out.hdf5").exists()
    assert not (tmp_path / "out.hdf5.partial").exists()


@pytest.mark.parametrize("layers", ["top", "average"])
def test_single_layer_outputs(tmp_path, bilm, fixture_sentences, layers):
    sentences = fixture_sentences[1][:3]
    embed_sentences(bilm, sentences, str(tmp_path / "out.hdf5"), layers=layers, batch_size=2)
    with torch.no_grad():
        all_layers = torch.stack(bilm(batch_to_ids(sentences))["activations"], 1)
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        for i, sentence in enumerate(sentences):
            expected = all_layers[i, :, : len(sentence)]
            expected = expected[-1] if layers == "top" else expected.mean(0)
            assert out[str(i)].shape == (len(sentence), 32)
            numpy.testing.assert_allclose(out[str(i)][...], expected.numpy(), atol=1e-5)


def test_existing_output_is_not_overwritten(tmp_path, bilm):
    (tmp_path / "out.hdf5").write_text("precious")
    with pytest.raises(FileExistsError, match="--overwrite"):
        embed_sentences(bilm, [["x"]], str(tmp_path / "out.hdf5"))
    assert (tmp_path / "out.hdf5").read_text() == "precious"
    embed_sentences(bilm, [["x"]], str(tmp_path / "out.hdf5"), overwrite=True)
    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert out["0"].shape == (3, 1, 32)


def test_read_sentences_errors(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="no sentences"):
        read_sentences(str(tmp_path / "empty.txt"))
