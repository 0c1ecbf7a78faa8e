"""ELMoForManyLangs' `Embedder` API (issue 68): `elmo_bilm.elmoformanylangs.Embedder(model_dir)
.sents2elmo(sents, output_layer)` returns what ELMoForManyLangs' own returned
(fixtures/elmoformanylangs/expected.npz, written by its code) for every layer recorded, the
shapes and types it documents for the rest, and a script in the style of its README runs with
only the import line switched."""

import difflib
import json
import runpy
import sys
from pathlib import Path
from typing import Dict, List

import numpy
import pytest

from elmo_bilm.dropins.elmoformanylangs import Embedder
from elmo_bilm.utils.files import UsageError
from tests.numerics import NETWORK, assert_float32_close

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "elmoformanylangs"
MODELS = ("word8", "chars_only")
SENTENCES: List[List[str]] = json.loads((FIXTURE / "sentences.json").read_text("utf-8"))
RECORDED = (0, 1, 2, -1)  # the output_layer values expected.npz holds
DIM = 16


@pytest.fixture(scope="module")
def expected() -> Dict[str, numpy.ndarray]:
    with numpy.load(FIXTURE / "expected.npz") as arrays:
        return {key: arrays[key] for key in arrays.files}


@pytest.fixture(scope="module", params=MODELS)
def model(request) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def embedder(model) -> Embedder:
    """Stateless, so that every call gives the original's first-call values (the stateful
    default, ELMoForManyLangs' own, is tests/elmo_bilm/dropins/test_stateful.py's)."""
    return Embedder(str(FIXTURE / model), cuda_device=-1, stateful=False)


@pytest.mark.parametrize("layer", RECORDED)
def test_sents2elmo_equals_its_own_output(model, embedder, expected, layer):
    outputs = embedder.sents2elmo(SENTENCES, output_layer=layer)
    assert isinstance(outputs, list) and len(outputs) == len(SENTENCES)
    for i, (array, sentence) in enumerate(zip(outputs, SENTENCES)):
        assert isinstance(array, numpy.ndarray) and array.dtype == numpy.float32
        assert array.shape == (len(sentence), DIM)
        assert_float32_close(array, expected[f"{model}/{layer}/{i}"], NETWORK, f"{model} {i}")


def test_the_default_layer_is_the_average(model, embedder, expected):
    for i, array in enumerate(embedder.sents2elmo(SENTENCES)):
        assert_float32_close(array, expected[f"{model}/-1/{i}"], NETWORK, f"{model} {i}")


def test_all_layers(model, embedder, expected):
    """-2: `(3, n_tokens, dim)` float32, layer k equal to its output_layer k."""
    for i, array in enumerate(embedder.sents2elmo(SENTENCES, output_layer=-2)):
        assert array.dtype == numpy.float32 and array.shape == (3, len(SENTENCES[i]), DIM)
        assert array.flags.c_contiguous
        for layer in (0, 1, 2):
            reference = expected[f"{model}/{layer}/{i}"]
            assert_float32_close(array[layer], reference, NETWORK, f"{model} {i} {layer}")


def test_negative_layers_count_from_the_top(embedder):
    """As numpy indexing in ELMoForManyLangs: -3 is layer 0 of a 3-layer biLM."""
    bottom = embedder.sents2elmo(SENTENCES, output_layer=0)
    for a, b in zip(embedder.sents2elmo(SENTENCES, output_layer=-3), bottom):
        numpy.testing.assert_array_equal(a, b)


def test_batches_and_calls_do_not_change_the_vectors(model, expected):
    """Stateless (`stateful=False`): batches of 2, and a second call, give the first batch's
    values (ELMoForManyLangs' second call would start from carried states)."""
    small = Embedder(str(FIXTURE / model), batch_size=2, cuda_device=-1, stateful=False)
    for _ in range(2):
        for i, array in enumerate(small.sents2elmo(SENTENCES, output_layer=2)):
            assert_float32_close(array, expected[f"{model}/2/{i}"], NETWORK, f"{model} {i}")


def test_order_is_the_input_order(model, embedder, expected):
    """Sorted by length into batches inside, returned in the order given."""
    order = [4, 2, 0, 3, 1]
    outputs = embedder.sents2elmo([SENTENCES[i] for i in order], output_layer=1)
    for array, i in zip(outputs, order):
        assert_float32_close(array, expected[f"{model}/1/{i}"], NETWORK, f"{model} {i}")


def test_empty_inputs(embedder):
    assert embedder.sents2elmo([]) == []
    empty, one = embedder.sents2elmo([[], ["hello"]])
    assert empty.shape == (0, DIM) and one.shape == (1, DIM)
    assert embedder.sents2elmo([[]], output_layer=-2)[0].shape == (3, 0, DIM)


@pytest.mark.parametrize("layer", [3, -4, 1.0, True, "top", None])
def test_a_layer_it_lacks_is_a_usage_error(embedder, layer):
    with pytest.raises(UsageError, match="output_layer"):
        embedder.sents2elmo(SENTENCES, output_layer=layer)


def test_a_string_sentence_is_refused(embedder):
    with pytest.raises(TypeError, match="sentence 1 is the string"):
        embedder.sents2elmo([["a"], "a sentence"])


@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_a_bad_batch_size_is_a_usage_error(batch_size):
    with pytest.raises(UsageError, match="batch_size"):
        Embedder(str(FIXTURE / "word8"), batch_size=batch_size)


def test_a_missing_folder_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        Embedder(str(tmp_path / "no-model"))


# A script written for ELMoForManyLangs the way its README documents the API: build an Embedder on
# a model folder, call sents2elmo on segmented sentences, read one (seq_len, dim) array each.
PUBLIC_SCRIPT = """\
import sys
from elmoformanylangs import Embedder

e = Embedder(sys.argv[1])
sents = [["the", "cat", "sat"], ["a", "dog", "ran", "to", "the", "park"]]
averaged = e.sents2elmo(sents)
for sent, vectors in zip(sents, averaged):
    print(len(sent), vectors.shape)
word_layer = e.sents2elmo(sents, output_layer=0)
every_layer = e.sents2elmo(sents, output_layer=-2)
print(word_layer[1].shape, every_layer[1].shape)
"""


def test_a_public_script_runs_with_the_import_line_switched(tmp_path, monkeypatch, capsys):
    ours = PUBLIC_SCRIPT.replace(
        "from elmoformanylangs import Embedder",
        "from elmo_bilm.dropins.elmoformanylangs import Embedder",
    )
    changed = [
        line
        for line in difflib.unified_diff(PUBLIC_SCRIPT.splitlines(), ours.splitlines(), n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2, changed  # one line out, one line in
    script = tmp_path / "embed.py"
    script.write_text(ours, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script), str(FIXTURE / "word8")])
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == [
        f"3 (3, {DIM})",
        f"6 (6, {DIM})",
        f"(6, {DIM}) (3, 6, {DIM})",
    ]


@pytest.mark.parametrize("batch_size", [numpy.int64(2), 2.0])
def test_a_numpy_or_whole_float_batch_size_is_read(batch_size):
    # numpy.int64(2) was "must be a whole number of at least 1"
    embedder = Embedder(str(FIXTURE / MODELS[0]), batch_size, cuda_device=numpy.int64(-1))
    assert embedder.batch_size == 2 and type(embedder.batch_size) is int
    assert [a.shape for a in embedder.sents2elmo(SENTENCES[:3])] == [
        (len(s), DIM) for s in SENTENCES[:3]
    ]
