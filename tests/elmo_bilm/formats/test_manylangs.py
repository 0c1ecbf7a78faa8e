"""ELMoForManyLangs' model folders load as a biLM (issue 57 item 4): the layers equal those its own
`Embedder.sents2elmo` recorded (fixtures/elmoformanylangs, written by its code), through `Elmo`,
`ElmoEmbedder` and `elmo-embed`; malformed folders are one-line errors naming the file."""

import json
import pickle
import shutil
from pathlib import Path
from typing import Dict, List

import h5py
import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, FormatError
from elmo_bilm.cli.embed import main as elmo_embed
from elmo_bilm.formats.manylangs import ManyLangsBiLm, read_architecture
from elmo_bilm.sources.resolver import load_bilm
from tests.numerics import NETWORK, assert_float32_close

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "elmoformanylangs"
MODELS = ("word8", "chars_only")  # with an 8-d word embedding (zip pickles); chars only (legacy)
SENTENCES: List[List[str]] = json.loads((FIXTURE / "sentences.json").read_text("utf-8"))
LAYERS = (0, 1, 2, -1)  # sents2elmo's output_layer: -1 is the layers' average


@pytest.fixture(scope="module")
def expected() -> Dict[str, numpy.ndarray]:
    with numpy.load(FIXTURE / "expected.npz") as arrays:
        return {key: arrays[key] for key in arrays.files}


def _check(name: str, layers: List[numpy.ndarray], expected: Dict[str, numpy.ndarray]) -> None:
    """`layers[i]` `(3, n_tokens, dim)` equal sents2elmo's layers 0, 1, 2 and their average."""
    assert len(layers) == len(SENTENCES)
    for i, array in enumerate(layers):
        for layer in LAYERS:
            actual = array.mean(axis=0) if layer == -1 else array[layer]
            reference = expected[f"{name}/{layer}/{i}"]
            assert_float32_close(actual, reference, NETWORK, f"{name} sentence {i} layer {layer}")


@pytest.mark.parametrize("name", MODELS)
def test_loads_as_a_bilm(name):
    bilm = load_bilm(str(FIXTURE / name))
    assert isinstance(bilm, ManyLangsBiLm)
    assert bilm.num_layers == 3 and bilm.get_output_dim() == 16


@pytest.mark.parametrize("name", MODELS)
def test_elmo_embedder_equals_sents2elmo(name, expected):
    embedder = ElmoEmbedder(str(FIXTURE / name), stateful=False)
    _check(name, embedder.embed_batch(SENTENCES), expected)
    _check(name, list(embedder.embed_sentences(SENTENCES, batch_size=2)), expected)


@pytest.mark.parametrize("name", MODELS)
def test_elmo_with_the_bilm_ids_equals_sents2elmo(name, expected):
    """`Elmo(folder, None, 1)` fed `elmo.bilm.batch_to_ids(...)`; one-hot mixes pick a layer
    (softmax of -1e4 is exactly 0), equal weights average them."""
    per_layer = []
    for weights in ([0.0, -1e4, -1e4], [-1e4, 0.0, -1e4], [-1e4, -1e4, 0.0]):
        elmo = Elmo(str(FIXTURE / name), None, 1, dropout=0.0, scalar_mix_parameters=weights)
        output = elmo(elmo.bilm.batch_to_ids(SENTENCES))
        per_layer.append(output["elmo_representations"][0].detach().numpy())
    layers = [
        numpy.stack([mixed[i, : len(sentence)] for mixed in per_layer])
        for i, sentence in enumerate(SENTENCES)
    ]
    _check(name, layers, expected)
    elmo = Elmo(str(FIXTURE / name), None, 1, dropout=0.0, scalar_mix_parameters=[0.0] * 3)
    average = elmo(elmo.bilm.batch_to_ids(SENTENCES))["elmo_representations"][0]
    for i, sentence in enumerate(SENTENCES):
        assert_float32_close(average[i, : len(sentence)], expected[f"{name}/-1/{i}"], NETWORK)


@pytest.mark.parametrize("name", MODELS)
def test_elmo_embed_command_equals_sents2elmo(name, expected, tmp_path):
    text = tmp_path / "sentences.txt"
    text.write_text("".join(" ".join(s) + "\n" for s in SENTENCES), encoding="utf-8")
    options = ["--options-file", str(FIXTURE / name), "--batch-size", "2"]
    assert elmo_embed([str(text), str(tmp_path / "all.hdf5"), "--all", *options]) == 0
    assert elmo_embed([str(text), str(tmp_path / "average.hdf5"), "--average", *options]) == 0
    with h5py.File(tmp_path / "all.hdf5", "r") as all_layers:
        _check(name, [all_layers[str(i)][...] for i in range(len(SENTENCES))], expected)
    with h5py.File(tmp_path / "average.hdf5", "r") as average:
        for i in range(len(SENTENCES)):
            assert_float32_close(average[str(i)][...], expected[f"{name}/-1/{i}"], NETWORK)


def _copy(tmp_path: Path, name: str = "word8") -> Path:
    folder = tmp_path / name
    shutil.copytree(FIXTURE / name, folder)
    return folder


def _one_line_error(folder: Path, file_name: str) -> str:
    with pytest.raises(FormatError) as error:
        load_bilm(str(folder))
    message = str(error.value)
    assert "\n" not in message and str(folder / file_name) in message, message
    return message


def test_missing_char_dic(tmp_path):
    folder = _copy(tmp_path)
    (folder / "char.dic").unlink()
    assert "cannot read" in _one_line_error(folder, "char.dic")


def test_char_dic_without_a_special_entry(tmp_path):
    folder = _copy(tmp_path)
    lines = (folder / "char.dic").read_text("utf-8").splitlines()
    (folder / "char.dic").write_text(
        "".join(line + "\n" for line in lines if not line.startswith("<pad>")), "utf-8"
    )
    assert "<pad>" in _one_line_error(folder, "char.dic")


def test_malformed_dictionary_line(tmp_path):
    folder = _copy(tmp_path)
    with open(folder / "word.dic", "a", encoding="utf-8") as handle:
        handle.write("zebra\tseven\n")
    assert "word.dic:33:" in _one_line_error(folder, "word.dic")


def test_shape_mismatch_against_the_config(tmp_path):
    folder = _copy(tmp_path)
    architecture = json.loads((folder / "architecture.json").read_text("utf-8"))
    architecture["encoder"]["dim"] = 32
    (folder / "architecture.json").write_text(json.dumps(architecture), "utf-8")
    message = _one_line_error(folder, "encoder.pkl")
    assert "input_linearity.weight" in message and "(128, 8)" in message


def test_tensor_of_the_wrong_shape(tmp_path):
    folder = _copy(tmp_path)
    state = torch.load(folder / "token_embedder.pkl", weights_only=True)
    state["projection.bias"] = torch.zeros(9)
    torch.save(state, folder / "token_embedder.pkl")
    assert "projection.bias" in _one_line_error(folder, "token_embedder.pkl")


class _CreatesAFile:
    """A pickle payload that creates a file when unpickled by a trusting loader."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (str(self.target), "w"))


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_pickle_payload_runs_nothing(tmp_path, zipped):
    folder = _copy(tmp_path)
    target = tmp_path / "created_by_the_pickle"
    payload = {"forward_layer_0.input_linearity.weight": _CreatesAFile(target)}
    if zipped:
        torch.save(payload, folder / "encoder.pkl")
    else:
        (folder / "encoder.pkl").write_bytes(pickle.dumps(payload, protocol=2))
    assert not target.exists()
    _one_line_error(folder, "encoder.pkl")
    assert not target.exists()


def test_lstm_variants_are_refused(tmp_path):
    folder = _copy(tmp_path)
    architecture = json.loads((folder / "architecture.json").read_text("utf-8"))
    architecture["encoder"]["name"] = "lstm"
    (folder / "architecture.json").write_text(json.dumps(architecture), "utf-8")
    assert "encoder.name" in _one_line_error(folder, "architecture.json")


def test_config_path_outside_the_folder_is_not_read(tmp_path):
    """`config_path` naming a file outside the folder: only its name is looked up inside."""
    folder = _copy(tmp_path)
    (tmp_path / "outside.json").write_text((folder / "architecture.json").read_text("utf-8"))
    settings = json.loads((folder / "config.json").read_text("utf-8"))
    settings["config_path"] = "../outside.json"
    (folder / "config.json").write_text(json.dumps(settings), "utf-8")
    assert "outside.json" in _one_line_error(folder, "config.json")


def test_published_folders_name_a_packaged_config(tmp_path):
    """The published folders' `config_path` names ELMoForManyLangs' packaged architecture by a
    path of the machine that trained them: found by its file name."""
    settings = {"config_path": "/home/trainer/configs/cnn_50_100_512_4096_sample.json"}
    (tmp_path / "config.json").write_text(json.dumps(settings), "utf-8")
    config, source = read_architecture(tmp_path)
    assert "packaged cnn_50_100_512_4096_sample.json" in source
    assert config["encoder"]["dim"] == 4096 and config["token_embedder"]["word_dim"] == 100


def test_elmo_embed_reports_a_malformed_folder_in_one_line(tmp_path, capsys):
    folder = _copy(tmp_path)
    (folder / "char.dic").unlink()
    text = tmp_path / "in.txt"
    text.write_text("the cat\n", encoding="utf-8")
    assert elmo_embed([str(text), str(tmp_path / "out.hdf5"), "--options-file", str(folder)]) == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("elmo-embed: error:") and "char.dic" in error


def test_vocab_to_cache_and_the_onnx_export_know_its_own_ids(tmp_path):
    """`Elmo`'s cached vocabulary builds the model's own ids; the ONNX export, which builds
    bilm-tf's, refuses the model in one line."""
    from elmo_bilm.runtime.onnx import export_onnx

    folder = str(FIXTURE / "word8")
    sentences = [["the", "cat"], ["a"]]
    vocabulary = ["@@PADDING@@", "the", "cat", "a"]
    plain = Elmo(folder, None, 1, dropout=0.0)
    cached = Elmo(folder, None, 1, dropout=0.0, vocab_to_cache=vocabulary)
    cached.load_state_dict(plain.state_dict())
    ids = plain.bilm.batch_to_ids(sentences)
    words = torch.tensor([[1, 2], [3, 0]])
    expected = plain(ids)["elmo_representations"][0]
    assert torch.equal(cached(ids, words)["elmo_representations"][0], expected)
    with pytest.raises(ValueError, match="cannot be exported to ONNX"):
        export_onnx(plain.bilm, tmp_path / "model.onnx")
