"""`elmo_bilm.simple_elmo.ElmoModel` against NLPL's simple_elmo 0.9.2 itself (issue 68 item 4):
fixtures/simple_elmo/reference.npz holds what simple_elmo returned on the tiny bilm-tf biLM laid
out as an NLPL folder (its make_fixture.py; TensorFlow is never imported here). The same calls,
in the same order, on one stateful model loaded with `max_batch_size=4`: 11 texts in three
batches, so the second and third batches start from carried LSTM states.

Tolerance: `NETWORK` (128) float32 units of the largest magnitude compared. Each batch is a whole
biLM forward in another library's kernels (TensorFlow's against torch's), from starting states
that already agree to the previous batch's rounding; the forget gate (gain below 1) keeps the
carried differences from adding up (seen: about 1 unit, 9.5e-7 at a magnitude of 7). The text
averages are unit vectors of such values (magnitude at most 1). A state not carried, carried into
the wrong row or a skipped warm-up moves values by 1e-2 or more (asserted below), tens of
thousands of units.
"""

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List

import numpy
import pytest

from elmo_bilm.simple_elmo import ElmoModel
from tests.conftest import ELMO_FIXTURE
from tests.numerics import NETWORK, assert_float32_close

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "simple_elmo"
META: Dict[str, Any] = json.loads((FIXTURE / "texts.json").read_text("utf-8"))
TEXTS: List[List[str]] = META["texts"]
SIZE: int = META["max_batch_size"]
BATCHES = [range(start, min(start + SIZE, len(TEXTS))) for start in range(0, len(TEXTS), SIZE)]
DIFFERENT = 1e-2
WARMUPS = [False, True]


@pytest.fixture(scope="module")
def reference() -> Dict[str, numpy.ndarray]:
    with numpy.load(FIXTURE / "reference.npz") as arrays:
        return {key: arrays[key] for key in arrays.files}


def _nlpl_folder(root: Path) -> Path:
    """The tiny biLM as make_fixture.py laid it out for simple_elmo."""
    shutil.copy(ELMO_FIXTURE / "options.json", root / "options.json")
    shutil.copy(ELMO_FIXTURE / "lm_weights.hdf5", root / "model.hdf5")
    shutil.copy(ELMO_FIXTURE / "vocab_test.txt", root / "vocab.txt")
    return root


def _call(model: ElmoModel, key: str, session: Any) -> numpy.ndarray:
    kind, *rest = key.split("/")
    if kind == "session":
        return model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=session)
    layers, warmup = rest[0], rest[1] == "warmup=True"
    method = model.get_elmo_vectors if kind == "vectors" else model.get_elmo_vector_average
    return method(TEXTS, warmup=warmup, layers=layers)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> ElmoModel:
    """Stateful, the default, as simple_elmo."""
    elmo = ElmoModel()
    folder = _nlpl_folder(tmp_path_factory.mktemp("nlpl"))
    assert elmo.load(str(folder), max_batch_size=SIZE, cuda_device=-1) == (
        "The model is now loaded."
    )
    return elmo


@pytest.fixture(scope="module")
def ours(model) -> Dict[str, numpy.ndarray]:
    """Our results of the fixture's calls, in its order, on one model (as simple_elmo ran them)."""
    session = object()
    return {key: _call(model, key, session) for key in META["calls"]}


@pytest.fixture(scope="module")
def stateless(tmp_path_factory) -> ElmoModel:
    elmo = ElmoModel()
    folder = _nlpl_folder(tmp_path_factory.mktemp("nlpl"))
    elmo.load(str(folder), max_batch_size=SIZE, cuda_device=-1, stateful=False)
    return elmo


def _padding(output: numpy.ndarray, row: int) -> numpy.ndarray:
    """A text's positions after its tokens, up to its batch's longest text."""
    longest = max(len(TEXTS[other]) for other in BATCHES[row // SIZE])
    return output[row, ..., len(TEXTS[row]) : longest, :]


@pytest.mark.parametrize("warmup", WARMUPS)
@pytest.mark.parametrize("layers", ["average", "top", "all"])
def test_token_vectors_equal_simple_elmos_batch_after_batch(reference, ours, layers, warmup):
    key = f"vectors/{layers}/warmup={warmup}"
    theirs, mine = reference[key], ours[key]
    assert mine.shape == theirs.shape and mine.dtype == numpy.float64
    for number, batch in enumerate(BATCHES):
        for row in batch:
            length, where = len(TEXTS[row]), f"{key} batch {number} text {row}"
            assert_float32_close(
                mine[row, ..., :length, :], theirs[row, ..., :length, :], NETWORK, where
            )
            assert not mine[row, ..., length:, :].any(), where  # ours: zero after the tokens


@pytest.mark.parametrize("warmup", WARMUPS)
def test_simple_elmos_padding_holds_the_padding_tokens_vectors(reference, model, warmup):
    """The documented difference in `get_elmo_vectors`: after a text's tokens, up to its batch's
    longest text, simple_elmo leaves what bilm-tf outputs at a padding position, our
    `padding_layers` (the token layer's vector of a token of padding characters, zero in the LSTM
    layers; a third of the token layer in "average"); zero beyond, as ours everywhere."""
    every = reference[f"vectors/all/warmup={warmup}"]
    average = reference[f"vectors/average/warmup={warmup}"]
    top = reference[f"vectors/top/warmup={warmup}"]
    layers = model.padding_layers
    assert layers is not None and numpy.abs(layers[0]).max() > DIFFERENT
    assert not layers[1:].any()
    padded = [row for row in range(len(TEXTS)) if _padding(every, row).size]
    assert len(padded) == 8  # of the 11 texts, all but each batch's longest
    for row in padded:
        padding = _padding(every, row)
        expected = numpy.broadcast_to(layers[:, None, :], padding.shape)
        assert_float32_close(padding, expected, NETWORK, f"text {row}")
        assert_float32_close(_padding(average, row), expected.mean(axis=0), NETWORK, f"text {row}")
        assert not _padding(top, row).any()
    for output in (every, average, top):
        for row in range(len(TEXTS)):
            longest = max(len(TEXTS[other]) for other in BATCHES[row // SIZE])
            assert not output[row, ..., longest:, :].any()


@pytest.mark.parametrize("warmup", WARMUPS)
@pytest.mark.parametrize("layers", ["average", "top"])
def test_text_averages_equal_simple_elmos(reference, ours, layers, warmup):
    """Over the batch's longest text, padding included, as simple_elmo averages."""
    key = f"average/{layers}/warmup={warmup}"
    assert ours[key].shape == reference[key].shape and ours[key].dtype == numpy.float64
    for number, batch in enumerate(BATCHES):
        rows = list(batch)
        assert_float32_close(ours[key][rows], reference[key][rows], NETWORK, f"{key} {number}")


def _per_batch_padded(vectors: numpy.ndarray, batch: range) -> numpy.ndarray:
    """simple_elmo's `(texts, n_layers, batch's longest text, dim)` output of one batch."""
    longest = max(len(TEXTS[row]) for row in batch)
    return vectors[list(batch), :, :longest, :]


@pytest.mark.parametrize("warmup", WARMUPS)
def test_all_layer_averages_differ_as_documented(reference, ours, warmup):
    """simple_elmo 0.9.2 reshapes a batch's `(layers, positions)` axes to `(positions, layers)`
    without transposing, so its "all" averages mix layers and positions (shown on its own
    vectors); ours average each layer over the same positions, scaled to unit Frobenius length."""
    every = reference[f"vectors/all/warmup={warmup}"]
    theirs, mine = reference[f"average/all/warmup={warmup}"], ours[f"average/all/warmup={warmup}"]
    for batch in BATCHES:
        vectors = _per_batch_padded(every, batch).astype(numpy.float64)
        count, n_layers, longest, dim = vectors.shape
        mixed = vectors.reshape(count, longest, n_layers, dim).sum(axis=1)
        proper = vectors.mean(axis=2)
        for scaled, result in ((mixed, theirs), (proper, mine)):
            norms = numpy.linalg.norm(scaled.reshape(count, -1), axis=1)[:, None, None]
            assert_float32_close(result[list(batch)], scaled / norms, NETWORK, str(batch))
    assert numpy.abs(theirs - mine).max() > DIFFERENT


def test_warmup_and_carried_states_change_the_values(reference, stateless):
    """What the comparisons above can tell apart: warm-up moves every batch, and a stateless
    model (every text from zero states) matches simple_elmo's first batch without warm-up only."""
    off, on = reference["vectors/top/warmup=False"], reference["vectors/top/warmup=True"]
    plain = stateless.get_elmo_vectors(TEXTS, layers="top")
    for number, batch in enumerate(BATCHES):
        rows = list(batch)
        assert numpy.abs(off[rows] - on[rows]).max() > DIFFERENT, number
        gap = numpy.abs(plain[rows] - off[rows]).max()
        if number == 0:
            assert_float32_close(plain[rows], off[rows], NETWORK)
        else:
            assert gap > DIFFERENT, number


def test_a_session_continues_from_the_previous_call(reference, model):
    """simple_elmo: a session just initialised starts from zero states (its first call equals a
    fresh call) and its second call from where the first left them. Ours continues from the
    previous call's states whatever the session (the documented difference), so a call with a
    session right after a fresh call is simple_elmo's second."""
    fresh = reference["vectors/all/warmup=False"]
    assert_float32_close(reference["session/first"], fresh, NETWORK)
    second = reference["session/second"]
    assert numpy.abs(second - fresh).max() > DIFFERENT
    model.get_elmo_vectors(TEXTS, warmup=False, layers="all")
    mine = model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=object())
    for number, batch in enumerate(BATCHES):
        for row in batch:
            length = len(TEXTS[row])
            assert_float32_close(
                mine[row, :, :length], second[row, :, :length], NETWORK, f"batch {number} {row}"
            )
