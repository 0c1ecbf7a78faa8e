"""`elmo_bilm.simple_elmo.ElmoModel` against NLPL's simple_elmo 0.9.2 itself (issue 68 item 4):
fixtures/simple_elmo/reference.npz holds what simple_elmo returned on the tiny bilm-tf biLM laid
out as an NLPL folder (its make_fixture.py; TensorFlow is never imported here). The same calls,
in the same order, on one stateful model loaded with `max_batch_size=4`: 11 texts in three
batches, so the second and third batches start from carried LSTM states; then calls with three
sessions of the caller's (each a new object here, each keeping its own states as simple_elmo's
TensorFlow sessions keep theirs), a call without one between them.

Tolerance: `NETWORK` (128) float32 units of the largest magnitude compared. Each batch is a whole
biLM forward in another library's kernels (TensorFlow's against torch's), from starting states
that already agree to the previous batch's rounding; the forget gate (gain below 1) keeps the
carried differences from adding up (seen: about 1 unit, 9.5e-7 at a magnitude of 7). The text
averages are unit vectors of such values (magnitude at most 1). A state not carried, carried into
the wrong row or a skipped warm-up moves values by 1e-2 or more (asserted below), tens of
thousands of units.
"""

import gc
import json
import shutil
import weakref
from pathlib import Path
from typing import Any, Dict, List

import numpy
import pytest

from elmo_bilm.dropins.simple_elmo import ElmoModel
from tests.conftest import ELMO_FIXTURE
from tests.numerics import NETWORK, assert_float32_close

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "simple_elmo"
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


class Session:
    """A caller's session: any object (TensorFlow is not imported here)."""


def _call(model: ElmoModel, call: Dict[str, Any], sessions: Dict[str, Any]) -> numpy.ndarray:
    """One of the fixture's calls, with the same arguments; a session name maps to one object."""
    name = call["session"]
    session = sessions.setdefault(name, Session()) if name is not None else None
    method = getattr(model, call["method"])
    return method(TEXTS, warmup=call["warmup"], layers=call["layers"], session=session)


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
    sessions: Dict[str, Any] = {}
    return {call["key"]: _call(model, call, sessions) for call in META["calls"]}


@pytest.fixture(scope="module")
def stateless(tmp_path_factory) -> ElmoModel:
    elmo = ElmoModel()
    folder = _nlpl_folder(tmp_path_factory.mktemp("nlpl"))
    elmo.load(str(folder), max_batch_size=SIZE, cuda_device=-1, stateful=False)
    return elmo


VECTOR_CALLS = [call["key"] for call in META["calls"] if call["method"] == "get_elmo_vectors"]


def _longest(row: int) -> int:
    """The longest text of text `row`'s batch."""
    return max(len(TEXTS[other]) for other in BATCHES[row // SIZE])


def _padding(output: numpy.ndarray, row: int) -> numpy.ndarray:
    """A text's positions after its tokens, up to its batch's longest text."""
    return output[row, ..., len(TEXTS[row]) : _longest(row), :]


def test_the_fixture_has_every_case():
    """The cases the comparisons below need: the call's longest text (9 tokens) in the first
    batch only (the others end at 7), 8 of the 11 texts shorter than their batch's longest, and
    the session calls in the order new session, same session, another new session, none, the
    first again, the other again, a third new one with warm-up."""
    assert max(len(text) for text in TEXTS) == 9
    assert [_longest(row) for row in (0, 4, 8)] == [9, 7, 7]
    assert sum(len(TEXTS[row]) < _longest(row) for row in range(len(TEXTS))) == 8
    assert len(VECTOR_CALLS) == 13
    sessions = [call["session"] for call in META["calls"] if call["key"] in VECTOR_CALLS[6:]]
    assert sessions == ["a", "a", "b", None, "a", "b", "c"]


@pytest.mark.parametrize("key", VECTOR_CALLS)
def test_token_vectors_equal_simple_elmos_padding_included(reference, ours, key):
    """Every `get_elmo_vectors` call, every position: the text's tokens, its padding up to its
    batch's longest text (the padding token's layers, as simple_elmo leaves them) and the zeros
    past that up to the call's longest text (exactly zero in both)."""
    theirs, mine = reference[key], ours[key]
    assert mine.shape == theirs.shape and mine.dtype == numpy.float64
    for number, batch in enumerate(BATCHES):
        for row in batch:
            where = f"{key} batch {number} text {row}"
            assert_float32_close(mine[row], theirs[row], NETWORK, where)
            assert not theirs[row, ..., _longest(row) :, :].any(), where
            assert not mine[row, ..., _longest(row) :, :].any(), where


@pytest.mark.parametrize("warmup", WARMUPS)
def test_simple_elmos_padding_holds_the_padding_tokens_vectors(reference, model, warmup):
    """What the padding comparisons above compare: after a text's tokens, up to its batch's
    longest text, simple_elmo leaves what bilm-tf outputs at a padding position, our
    `padding_layers` (the token layer's vector of a token of padding characters, zero in the LSTM
    layers; a third of the token layer in "average"), far from zero; zero beyond."""
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
            assert not output[row, ..., _longest(row) :, :].any()


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


def test_each_session_keeps_its_own_states(reference):
    """What the session comparisons above can tell apart, in simple_elmo's own outputs: a new
    session starts from zero states (its first call equals a call without one, with or without
    warm-up), a session's next call continues from where its last call left them (A's third call
    differs from its second), and a call without a session or with another session between
    changes nothing of that (B's second call equals A's second, bit for bit)."""
    fresh, warm = reference["vectors/all/warmup=False"], reference["vectors/all/warmup=True"]
    for key in ("session/a/1", "session/b/1", "between/all/warmup=False"):
        numpy.testing.assert_array_equal(reference[key], fresh, key)
    numpy.testing.assert_array_equal(reference["session/c/1/warmup=True"], warm)
    numpy.testing.assert_array_equal(reference["session/b/2"], reference["session/a/2"])
    assert numpy.abs(reference["session/a/2"] - fresh).max() > DIFFERENT
    assert numpy.abs(reference["session/a/3"] - reference["session/a/2"]).max() > DIFFERENT


def test_a_session_that_cannot_be_weakly_referenced_continues_too(model):
    """A plain `object()` (no weak references): the same object continues, a new one starts
    from zero, as simple_elmo's sessions."""
    first, second = object(), object()
    calls = [
        model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=session)
        for session in (first, first, second, second)
    ]
    fresh = model.get_elmo_vectors(TEXTS, warmup=False, layers="all")
    assert_float32_close(calls[0], fresh, NETWORK)
    assert_float32_close(calls[2], fresh, NETWORK)
    assert_float32_close(calls[3], calls[1], NETWORK)
    assert numpy.abs(calls[1] - fresh).max() > DIFFERENT


def test_a_dropped_session_is_forgotten(model):
    """Sessions are held weakly: the model keeps no session alive."""
    session = Session()
    model.get_elmo_vectors(TEXTS[:2], warmup=False, session=session)
    alive = weakref.ref(session)
    del session
    gc.collect()
    assert alive() is None
