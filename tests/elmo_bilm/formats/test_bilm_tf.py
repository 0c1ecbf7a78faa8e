import json
import re

import h5py
import numpy
import pytest
import torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids

from elmo_bilm import FormatError, export_bilm_tf, load_bilm_tf
from tests.conftest import ELMO_FIXTURE, OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

# compared across rounding paths: make test reruns it on AVX2 kernels and on an emulated AVX2 CPU
pytestmark = [pytest.mark.numerics, pytest.mark.emulated_cpu]


@pytest.fixture(scope="module")
def bilm():
    return load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()


def test_layers_match_allennlp_elmo_bilm(bilm, fixture_sentences):
    reference = _ElmoBiLm(str(OPTIONS_FILE), str(WEIGHT_FILE))
    sentences = [s for group in fixture_sentences for s in group]
    for start in range(0, len(sentences), 8):  # mixed lengths in every batch, fresh AllenNLP state
        reference._elmo_lstm.reset_states()
        char_ids = batch_to_ids(sentences[start : start + 8])
        with torch.no_grad():
            expected = reference(char_ids)
            ours = bilm(char_ids, keep_sentence_boundaries=True)
        mask = expected["mask"]
        assert torch.equal(ours["mask"], mask)
        assert len(ours["activations"]) == len(expected["activations"]) == 3
        for layer, (mine, theirs) in enumerate(zip(ours["activations"], expected["activations"])):
            assert_float32_close(
                mine * mask[..., None], theirs * mask[..., None], NETWORK, f"layer {layer}"
            )


def test_top_layer_matches_bilm_tf_reference_activations(bilm, fixture_sentences):
    # bilm-tf ran batches of 3 (one sentence from each list) carrying LSTM state across batches,
    # so only dataset "0" of each file starts from a zero state, as the plugin's biLM always does.
    first = [group[0] for group in fixture_sentences]
    with torch.no_grad():
        top = bilm(batch_to_ids(first))["activations"][-1]
    for k, sentence in enumerate(first):
        with h5py.File(ELMO_FIXTURE / f"lm_embeddings_{k}.hdf5", "r") as handle:
            expected = handle["0"][...]  # (2, T, 16) = forward, backward
        n = len(sentence)
        ours = top[k, :n].numpy()
        assert_float32_close(ours[:, :16], expected[0], NETWORK)
        assert_float32_close(ours[:, 16:], expected[1], NETWORK)


def test_export_round_trip_is_exact(bilm, tmp_path):
    export_bilm_tf(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    with (
        h5py.File(WEIGHT_FILE, "r") as original,
        h5py.File(tmp_path / "weights.hdf5", "r") as exported,
    ):
        names = []
        original.visititems(
            lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None
        )
        for name in names:
            assert name in exported, name
            numpy.testing.assert_array_equal(original[name][...], exported[name][...], err_msg=name)
    again = load_bilm_tf(tmp_path / "options.json", tmp_path / "weights.hdf5")
    for (name, a), (_, b) in zip(bilm.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), name
    assert again.options == bilm.options


@pytest.mark.same_on_every_cpu
def test_a_compressed_export_loads_the_same_here_and_in_allennlp(bilm, tmp_path, fixture_sentences):
    half = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    with torch.no_grad():  # float16 values, as a GPU run's weights come back
        for parameter in half.parameters():
            parameter.copy_(parameter.half().float())
    export_bilm_tf(half, tmp_path / "o.json", tmp_path / "w.hdf5", compress=True)
    export_bilm_tf(half, tmp_path / "plain.json", tmp_path / "plain.hdf5")
    with h5py.File(tmp_path / "w.hdf5", "r") as weights:
        assert weights["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"].compression == "gzip"
    assert (tmp_path / "w.hdf5").stat().st_size < 0.8 * (tmp_path / "plain.hdf5").stat().st_size
    again = load_bilm_tf(tmp_path / "o.json", tmp_path / "w.hdf5")
    for (name, a), (_, b) in zip(half.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), name
    reference = _ElmoBiLm(str(tmp_path / "o.json"), str(tmp_path / "w.hdf5"))
    char_ids = batch_to_ids(fixture_sentences[0])
    with torch.no_grad():
        expected = reference(char_ids)["activations"][-1]
        ours = again(char_ids, keep_sentence_boundaries=True)["activations"][-1]
    mask = reference(char_ids)["mask"][..., None]
    assert_float32_close(ours * mask, expected * mask, NETWORK)


def test_export_refuses_to_overwrite(bilm, tmp_path):
    (tmp_path / "weights.hdf5").write_text("keep me")
    with pytest.raises(FileExistsError, match="weights.hdf5"):
        export_bilm_tf(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    assert (tmp_path / "weights.hdf5").read_text() == "keep me"


def _copy_weights(tmp_path, drop=None, replace=None):
    path = tmp_path / "weights.hdf5"
    with h5py.File(WEIGHT_FILE, "r") as src, h5py.File(path, "w") as dst:

        def copy(name, obj):
            if isinstance(obj, h5py.Dataset) and name != drop:
                dst[name] = replace[1] if replace and name == replace[0] else obj[...]

        src.visititems(copy)
    return path


def test_missing_dataset_is_named(tmp_path):
    name = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"
    path = _copy_weights(tmp_path, drop=name)
    with pytest.raises(FormatError, match="W_P_0.*missing"):
        load_bilm_tf(OPTIONS_FILE, path)


def test_wrong_shape_names_dataset_and_both_shapes(tmp_path):
    path = _copy_weights(tmp_path, replace=("CNN/W_cnn_2", numpy.zeros((1, 3, 4, 7), "float32")))
    with pytest.raises(FormatError) as error:
        load_bilm_tf(OPTIONS_FILE, path)
    message = str(error.value)
    assert "CNN/W_cnn_2" in message and "(1, 3, 4, 7)" in message and "(1, 3, 4, 16)" in message


def test_mismatched_options_fail_clearly(tmp_path):
    options = (OPTIONS_FILE.read_text()).replace('"dim": 64', '"dim": 32')
    (tmp_path / "options.json").write_text(options)
    with pytest.raises(FormatError, match=r"W_0.*\(32, 256\).*\(32, 128\)"):
        load_bilm_tf(tmp_path / "options.json", WEIGHT_FILE)


def test_options_errors(tmp_path):
    (tmp_path / "bad.json").write_text('{"lstm": {\n "dim": 4,,}}')
    with pytest.raises(FormatError, match="bad.json:2: not valid JSON"):
        load_bilm_tf(tmp_path / "bad.json", WEIGHT_FILE)
    (tmp_path / "nolstm.json").write_text(
        '{"char_cnn": {"embedding": {"dim": 4}, "filters": [], "n_highway": 0}}'
    )
    with pytest.raises(FormatError, match="missing section 'lstm'"):
        load_bilm_tf(tmp_path / "nolstm.json", WEIGHT_FILE)


def test_training_options_with_261_characters_load(tmp_path, bilm, fixture_sentences):
    (tmp_path / "options.json").write_text(OPTIONS_FILE.read_text().replace("262", "261"))
    again = load_bilm_tf(tmp_path / "options.json", WEIGHT_FILE).eval()
    char_ids = batch_to_ids(fixture_sentences[0][:3])
    # both compute every word in this batch: the fixture's cache holds other batches' bits
    bilm.char_cnn.clear_word_cache()
    with torch.no_grad():
        for a, b in zip(bilm(char_ids)["activations"], again(char_ids)["activations"]):
            assert torch.equal(a, b)


def test_loading_overwrites_every_parameter(monkeypatch, bilm, fixture_sentences):
    """The loader skips the random initialisation: poison every parameter of the biLM it builds
    with NaN and check that none survives the load, and that the layers are unchanged."""
    from elmo_bilm.formats import bilm_tf
    from elmo_bilm.model.bilm import BiLm

    class Poisoned(BiLm):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            with torch.no_grad():
                for parameter in self.parameters():
                    parameter.fill_(float("nan"))

    monkeypatch.setattr(bilm_tf, "BiLm", Poisoned)
    loaded = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    assert isinstance(loaded, Poisoned)
    assert not any(torch.isnan(p).any() for p in loaded.parameters())
    char_ids = batch_to_ids(fixture_sentences[0][:3])
    bilm.char_cnn.clear_word_cache()  # as above: the same batch, computed afresh by both
    with torch.no_grad():
        for a, b in zip(loaded(char_ids)["activations"], bilm(char_ids)["activations"]):
            assert torch.equal(a, b)


def test_damaged_weights_are_refused_naming_the_file(tmp_path):
    """Overwritten LSTM bytes (NaN) and a truncated file: a FormatError naming the file, not a
    biLM that embeds NaN or a bare OSError."""
    import shutil

    broken = tmp_path / "nan.hdf5"
    shutil.copy(WEIGHT_FILE, broken)
    with h5py.File(broken, "r+") as weights:
        name = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
        weights[name][0, :5] = numpy.nan
    with pytest.raises(FormatError, match="nan.hdf5: NaN or infinite values in lstm.input_weights"):
        load_bilm_tf(OPTIONS_FILE, broken)
    truncated = tmp_path / "cut.hdf5"
    truncated.write_bytes(WEIGHT_FILE.read_bytes()[:5000])
    with pytest.raises(FormatError, match="cut.hdf5: cannot read the HDF5 weights"):
        load_bilm_tf(OPTIONS_FILE, truncated)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("lstm.n_layers", -1, "an integer >= 1"),  # silently dropped the LSTM before
        ("lstm.n_layers", 1.5, "an integer >= 1"),
        ("lstm.use_skip_connections", "false", "true or false"),  # a string was true
        ("char_cnn.max_characters_per_token", 30, "50"),  # was ignored
        ("char_cnn.n_characters", 300, "261"),
        ("char_cnn.activation", "gelu", '"relu" or "tanh"'),
        ("char_cnn.filters", [[1, 0]], "integer pairs >= 1"),
        ("char_cnn.n_highway", -2, "an integer >= 0"),
        ("char_cnn.embedding.dim", "4", "an integer >= 1"),
        ("lstm.cell_clip", -3, "a number > 0 or null"),
        ("lstm.proj_clip", "3", "a number > 0 or null"),
        ("lstm.dim", 0, "an integer >= 1"),
        ("lstm.projection_dim", True, "an integer >= 1"),
        ("bidirectional", False, "true"),  # a forward-only LM cannot be honoured
        ("dropout", 1.5, r"a number in \[0, 1\)"),
    ],
)
def test_every_option_is_checked_naming_file_and_key(tmp_path, key, value, expected):
    options = json.loads(OPTIONS_FILE.read_text())
    *path, last = key.split(".")
    holder = options
    for part in path:
        holder = holder[part]
    holder[last] = value
    (tmp_path / "options.json").write_text(json.dumps(options))
    with pytest.raises(FormatError) as error:
        load_bilm_tf(tmp_path / "options.json", WEIGHT_FILE)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'options.json'}: {key} is {json.dumps(value)}")
    assert re.search(expected, message) and "\n" not in message


def test_swapped_files_and_truncated_options_are_named(tmp_path):
    with pytest.raises(FormatError, match=r"lm_weights.hdf5: an HDF5 file .* swapped"):
        load_bilm_tf(WEIGHT_FILE, OPTIONS_FILE)
    with pytest.raises(FormatError, match=r"options.json: a JSON file .* swapped"):
        load_bilm_tf(OPTIONS_FILE, OPTIONS_FILE)
    (tmp_path / "cut.json").write_text(OPTIONS_FILE.read_text()[:40])
    with pytest.raises(FormatError, match=r"cut.json:\d+: not valid JSON .*truncated"):
        load_bilm_tf(tmp_path / "cut.json", WEIGHT_FILE)
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + OPTIONS_FILE.read_bytes())
    assert load_bilm_tf(tmp_path / "bom.json", WEIGHT_FILE).num_layers == 3  # a BOM is fine
