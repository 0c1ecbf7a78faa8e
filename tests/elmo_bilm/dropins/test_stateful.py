"""The stateful mode (issue 68 item 3; the default since issue 80): `Elmo(stateful=True)` and
`ElmoEmbedder(stateful=True)` carry LSTM states between batches as AllenNLP does, so a sequence
of batches gives AllenNLP 2.10's numbers batch after batch; ELMoForManyLangs' `Embedder` and
simple_elmo's `ElmoModel` are stateful by default, as their originals are, and batch as those do.

Tolerance: `NETWORK` float32 units, as for one stateless pass. Each batch is one biLM pass whose
starting states already equal AllenNLP's to within the previous batch's rounding; the forget gate
(gain below 1) scales what is carried, so differences do not add up from batch to batch (seen:
at most 4 units over these four batches). A state carried into the wrong row, or not carried,
differs by 0.1 or more, tens of thousands of units; the stateless mode (`stateful=False`) is
asserted to differ so from the second batch on, which shows these comparisons can fail.
"""

import json
import random
import shutil
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from elmo_bilm.dropins.elmoformanylangs import Embedder
from elmo_bilm.dropins.simple_elmo import ElmoModel
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
MIX = [0.3, -0.2, 0.5]
# four batches of 3, 5, 2 and 4 sentences, of other lengths each time (padding included); the
# empty sentence runs as `<S> </S>` in AllenNLP and moves its row's states
BATCHES: List[List[List[str]]] = [
    [["The", "cat", "sat", "on", "the", "mat", "."], ["Dogs", "bark"], ["Hi"]],
    [["a"], ["b", "c", "d"], [], ["x", "y", "z", "w", "v"], ["One", "more", "sentence", "!"]],
    [["Birds", "sing", "at", "dawn", "in", "May", "."], ["Yes"]],
    [["Rain", "again"], ["the", "end"], ["A", "b", "c", "d", "e", "f", "g", "h"], ["."]],
]
# what "differs" means: far beyond any rounding (a carried state moves values by 0.1 or more)
DIFFERENT = 1e-2


def allennlp_elmo() -> torch.nn.Module:
    """AllenNLP 2.10's `Elmo`: its biLM is always stateful."""
    from allennlp.modules.elmo import Elmo as AllenNlpElmo

    return AllenNlpElmo(
        *FILES, 1, dropout=0.0, scalar_mix_parameters=MIX, requires_grad=False
    ).eval()


def ours(stateful: bool) -> Elmo:
    return Elmo(*FILES, 1, dropout=0.0, scalar_mix_parameters=MIX, stateful=stateful)


def representation(elmo: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        output: Dict[str, Any] = elmo(ids)
    return output["elmo_representations"][0]


def test_stateful_elmo_equals_allennlp_batch_after_batch() -> None:
    theirs, mine, stateless = allennlp_elmo(), ours(True), ours(False)
    assert mine.stateful and not stateless.stateful
    for number, batch in enumerate(BATCHES):
        ids = batch_to_ids(batch)
        reference = representation(theirs, ids)
        assert_float32_close(representation(mine, ids), reference, NETWORK, f"batch {number}")
        gap = (representation(stateless, ids) - reference).abs().max().item()
        if number == 0:  # both start from zero states
            assert gap <= NETWORK * 2**-23 * max(1.0, reference.abs().max().item())
        else:  # the stateless mode is the documented difference
            assert gap > DIFFERENT, f"batch {number}: stateless equals stateful ({gap})"
    # the carried states themselves, AllenNLP's layout: (layers, rows, [forward; backward])
    their_states = theirs._elmo_lstm._elmo_lstm._states
    my_states = mine._elmo_lstm._elmo_lstm._states  # AllenNLP's path to them works here too
    assert len(my_states) == 2 and my_states[0].shape[1] == 5  # the largest batch's rows
    for state, reference in zip(my_states, their_states):
        assert_float32_close(state, reference, NETWORK)
    assert stateless.bilm.lstm._states == ()


def test_reset_states_starts_from_zero_again() -> None:
    theirs, mine = allennlp_elmo(), ours(True)
    for batch in BATCHES[:2]:
        representation(theirs, batch_to_ids(batch))
        representation(mine, batch_to_ids(batch))
    theirs._elmo_lstm._elmo_lstm.reset_states()
    mine.reset_states()
    assert mine._elmo_lstm._elmo_lstm._states == ()
    ids = batch_to_ids(BATCHES[2])
    first = representation(ours(False), ids)
    assert_float32_close(representation(mine, ids), first, NETWORK)
    assert_float32_close(representation(theirs, ids), first, NETWORK)


def test_a_partial_reset_forgets_only_the_masked_rows() -> None:
    """AllenNLP's `reset_states(mask)`: true rows start from zero, the others keep theirs."""
    theirs, mine = allennlp_elmo(), ours(True)
    for batch in BATCHES[:2]:
        representation(theirs, batch_to_ids(batch))
        representation(mine, batch_to_ids(batch))
    mask = torch.tensor([True, False, True, False, False])
    theirs._elmo_lstm._elmo_lstm.reset_states(mask)
    mine._elmo_lstm._elmo_lstm.reset_states(mask)
    ids = batch_to_ids(BATCHES[3])
    assert_float32_close(representation(mine, ids), representation(theirs, ids), NETWORK)
    with pytest.raises(ValueError, match="batch size"):
        mine._elmo_lstm._elmo_lstm.reset_states(torch.tensor([True]))


def _allennlp_layers(bilm: torch.nn.Module, batch: Sequence[Sequence[str]]) -> List[numpy.ndarray]:
    """AllenNLP 0.9's `ElmoEmbedder.embed_batch` on AllenNLP 2.10's (stateful) `_ElmoBiLm`:
    every layer, less the sentence boundaries, cut to each sentence's length."""
    from allennlp.nn.util import remove_sentence_boundaries

    with torch.no_grad():
        output = bilm(batch_to_ids(batch))
    layers = [
        remove_sentence_boundaries(layer, output["mask"])[0] for layer in output["activations"]
    ]
    stacked = torch.stack(layers, dim=1).numpy()
    return [stacked[row, :, : len(sentence)] for row, sentence in enumerate(batch)]


def test_stateful_elmo_embedder_equals_allennlp_batch_after_batch() -> None:
    """`embed_batch` batch after batch, and `embed_sentences` in batches of `batch_size` in input
    order (0.9's), equal AllenNLP's stateful biLM; the stateless mode differs after the first
    batch (`embed_file`, stateful in input order: test_dropin_defaults.py)."""
    from allennlp.modules.elmo import _ElmoBiLm

    theirs = _ElmoBiLm(*FILES).eval()
    references = [_allennlp_layers(theirs, batch) for batch in BATCHES]
    embedder = ElmoEmbedder(*FILES, stateful=True)
    stateless = ElmoEmbedder(*FILES, stateful=False)
    for number, (batch, expected) in enumerate(zip(BATCHES, references)):
        for row, (mine, reference) in enumerate(zip(embedder.embed_batch(batch), expected)):
            assert_float32_close(mine, reference, NETWORK, f"batch {number} row {row}")
        plain = stateless.embed_batch(batch)
        gap = max(float(abs(a - b).max(initial=0.0)) for a, b in zip(plain, expected))
        assert (gap < DIFFERENT) == (number == 0), f"batch {number}: {gap}"

    # embed_sentences: the same sentences as batches of three in input order
    flat = [sentence for batch in BATCHES for sentence in batch]
    theirs._elmo_lstm.reset_states()
    expected = [
        layers
        for start in range(0, len(flat), 3)
        for layers in _allennlp_layers(theirs, flat[start : start + 3])
    ]
    embedder.reset_states()
    for index, (mine, reference) in enumerate(
        zip(embedder.embed_sentences(flat, batch_size=3), expected)
    ):
        assert_float32_close(mine, reference, NETWORK, f"sentence {index}")


# ELMoForManyLangs: fixtures/elmoformanylangs/expected.npz holds what its own `sents2elmo` gave on
# the first call of a fresh `Embedder` (one batch: five sentences, batch size 64), so it checks
# the first batch only; later batches are checked against the order its `create_batches` runs.
MANYLANGS = Path(__file__).resolve().parents[3] / "fixtures" / "elmoformanylangs"
SENTENCES: List[List[str]] = json.loads((MANYLANGS / "sentences.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def manylangs_expected() -> Dict[str, numpy.ndarray]:
    with numpy.load(MANYLANGS / "expected.npz") as arrays:
        return {key: arrays[key] for key in arrays.files}


@pytest.mark.parametrize("model", ["word8", "chars_only"])
def test_manylangs_is_stateful_by_default(model, manylangs_expected) -> None:
    """A fresh `Embedder`'s first call is the original's (recorded the same way, a fresh one per
    layer); a second call starts from the carried states, so differs; `reset_states` forgets."""
    for layer in (0, 1, 2, -1):
        embedder = Embedder(str(MANYLANGS / model), cuda_device=-1)
        assert embedder.stateful
        for i, array in enumerate(embedder.sents2elmo(SENTENCES, output_layer=layer)):
            reference = manylangs_expected[f"{model}/{layer}/{i}"]
            assert_float32_close(array, reference, NETWORK, f"{model} {layer} {i}")
    again = embedder.sents2elmo(SENTENCES, output_layer=-1)
    gap = max(
        float(abs(a - manylangs_expected[f"{model}/-1/{i}"]).max()) for i, a in enumerate(again)
    )
    assert gap > DIFFERENT, gap
    embedder.reset_states()
    for i, array in enumerate(embedder.sents2elmo(SENTENCES, output_layer=-1)):
        assert_float32_close(array, manylangs_expected[f"{model}/-1/{i}"], NETWORK, str(i))


def test_manylangs_batches_run_as_the_original_runs_them(manylangs_expected) -> None:
    """Batch size 2: sentences sorted longest first (ties in input order), cut into batches of
    two, the batches run in the order `random.shuffle` draws from Python's generator; each row
    starts from the same row's states of the batch run before. The reference runs the same
    batches as one-batch calls of a second embedder in that order (a one-batch call keeps its
    rows' order, and shuffles a one-item list, which draws nothing). The batch run first starts
    from zero, so it equals the original's recorded values."""
    folder = str(MANYLANGS / "word8")
    sentences = SENTENCES + [["the", "dog"], [], ["a", "cat", "ran"]]
    order = sorted(range(len(sentences)), key=lambda index: -len(sentences[index]))
    batches = [order[start : start + 2] for start in range(0, len(order), 2)]
    random.seed(68)
    shuffled = list(range(len(batches)))
    random.shuffle(shuffled)
    assert shuffled != sorted(shuffled)  # this seed's order is not the batches' own

    reference_embedder = Embedder(folder, cuda_device=-1)
    expected: Dict[int, numpy.ndarray] = {}
    for number in shuffled:
        rows = batches[number]
        outputs = reference_embedder.sents2elmo([sentences[i] for i in rows], output_layer=-2)
        expected.update(zip(rows, outputs))

    random.seed(68)
    outputs = Embedder(folder, batch_size=2, cuda_device=-1).sents2elmo(sentences, output_layer=-2)
    for index, array in enumerate(outputs):
        assert_float32_close(array, expected[index], NETWORK, f"sentence {index}")
    for index in batches[shuffled[0]]:
        if index < len(SENTENCES):
            for layer in (0, 1, 2):
                reference = manylangs_expected[f"word8/{layer}/{index}"]
                assert_float32_close(outputs[index][layer], reference, NETWORK, str(index))
    stateless = Embedder(folder, batch_size=2, cuda_device=-1, stateful=False)
    plain = stateless.sents2elmo(sentences, output_layer=-2)
    assert max(float(abs(a - b).max(initial=0.0)) for a, b in zip(plain, outputs)) > DIFFERENT


# simple_elmo: bilm-tf keeps each row's states in variables that the next batch's rows [:batch]
# start from and all update (every row runs: each text has `<S>` and `</S>`), which is AllenNLP's
# update when every row runs; so AllenNLP 2.10's stateful `_ElmoBiLm` is the reference for the
# tokens. Each call without a session opens a new TensorFlow session (zero states), warms up on
# its first batch, then runs the batches in input order; a session passed in keeps its own
# states from call to call. After a text's tokens, up to its batch's longest text, simple_elmo
# leaves bilm-tf's padding-position layers (`ElmoModel.padding_layers`, which
# tests/elmo_bilm/dropins/test_simple_elmo_reference.py finds in simple_elmo 0.9.2's own output; AllenNLP
# masks them to zero), zero past that (fixtures/simple_elmo measured both).
TEXTS = [sentence for batch in BATCHES for sentence in batch if sentence][:7]


def _simple_elmo_reference(
    texts: Sequence[Sequence[str]], size: int, warmup: bool, padding: numpy.ndarray
) -> Any:
    """What simple_elmo's `get_elmo_vectors(texts, warmup, layers="all")` computes: the tokens
    from AllenNLP's stateful biLM, `padding` (`(n_layers, dim)`) after them up to the batch's
    longest text, zero beyond: `(n_texts, n_layers, longest, dim)`."""
    from allennlp.modules.elmo import _ElmoBiLm

    bilm = _ElmoBiLm(*FILES).eval()
    chunks = [list(texts[start : start + size]) for start in range(0, len(texts), size)]
    if warmup:
        _allennlp_layers(bilm, chunks[0])
    longest = max(len(text) for text in texts)
    vectors = numpy.zeros((len(texts), 3, longest, 32))
    row = 0
    for chunk in chunks:
        batch_longest = max(len(text) for text in chunk)
        for layers in _allennlp_layers(bilm, chunk):
            vectors[row, :, : layers.shape[1]] = layers
            vectors[row, :, layers.shape[1] : batch_longest] = padding[:, None, :]
            row += 1
    return vectors


@pytest.fixture(scope="module")
def nlpl_model(tmp_path_factory) -> ElmoModel:
    """The fixture biLM as an NLPL folder, loaded with simple_elmo's defaults but batches of 3."""
    folder = tmp_path_factory.mktemp("nlpl")
    shutil.copy(OPTIONS_FILE, folder / "options.json")
    shutil.copy(WEIGHT_FILE, folder / "model.hdf5")
    model = ElmoModel()
    model.load(str(folder), max_batch_size=3, cuda_device=-1)
    return model


def test_the_simple_elmo_texts_have_padding_of_both_kinds() -> None:
    """The cases the tests below need: a text shorter than its batch's longest (padding layers)
    in a batch shorter than the call's longest text (zeros past it)."""
    lengths = [len(text) for text in TEXTS]
    batches = [lengths[start : start + 3] for start in range(0, len(lengths), 3)]
    assert any(length < max(batch) for batch in batches for length in batch)
    assert any(max(batch) < max(lengths) for batch in batches)


@pytest.mark.parametrize("warmup", [True, False])
def test_simple_elmo_is_stateful_by_default_with_its_warmup(nlpl_model, warmup) -> None:
    """Every call (new session) gives the same, the reference's, padding included; warm-up
    changes the values."""
    padding = nlpl_model.padding_layers
    assert padding is not None and float(abs(padding).max()) > DIFFERENT
    expected = _simple_elmo_reference(TEXTS, 3, warmup, padding)
    for _ in range(2):
        vectors = nlpl_model.get_elmo_vectors(TEXTS, warmup=warmup, layers="all")
        assert_float32_close(vectors, expected, NETWORK)
    other = _simple_elmo_reference(TEXTS, 3, not warmup, padding)
    assert float(abs(other - expected).max()) > DIFFERENT


def test_simple_elmo_sessions_keep_their_own_states(nlpl_model) -> None:
    """As simple_elmo's TensorFlow sessions: a new session starts from zero states, the same
    session object again continues from where its last call left them, whatever ran between;
    a call without a session starts from zero."""
    first, second = object(), object()
    fresh = nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all")
    started = nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=first)
    continued = nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=first)
    assert_float32_close(started, fresh, NETWORK)
    assert float(abs(continued - fresh).max()) > DIFFERENT
    assert_float32_close(
        nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=second),
        fresh,
        NETWORK,
    )
    assert_float32_close(
        nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all"), fresh, NETWORK
    )
    assert_float32_close(
        nlpl_model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=second),
        continued,
        NETWORK,
    )


def test_simple_elmo_stateless_pads_with_zeros(tmp_path) -> None:
    """`stateful=False`: zero after each text's tokens, and a session changes nothing."""
    shutil.copy(OPTIONS_FILE, tmp_path / "options.json")
    shutil.copy(WEIGHT_FILE, tmp_path / "model.hdf5")
    model = ElmoModel()
    model.load(str(tmp_path), max_batch_size=3, cuda_device=-1, stateful=False)
    session = object()
    vectors = model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=session)
    for row, text in enumerate(TEXTS):
        assert not vectors[row, :, len(text) :].any(), row
    again = model.get_elmo_vectors(TEXTS, warmup=False, layers="all", session=session)
    numpy.testing.assert_array_equal(again, vectors)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN in this torch")
def test_the_per_direction_route_carries_states_as_the_stacked_one(monkeypatch) -> None:
    """oneDNN's route (and an inference precision's) keeps one stream per direction; its
    carried states and outputs equal the stacked `bmm` route's, batch after batch."""
    from elmo_bilm.model import onednn
    from elmo_bilm.model.lstm import ProjectedLstmStack

    torch.manual_seed(0)
    stacked = ProjectedLstmStack(16, 64, 16, 2, cell_clip=3.0, proj_clip=3.0).eval()
    split = ProjectedLstmStack(16, 64, 16, 2, cell_clip=3.0, proj_clip=3.0).eval()
    split.load_state_dict(stacked.state_dict())
    stacked.stateful = split.stateful = True
    for rows, steps in ((3, 5), (5, 7), (2, 4)):
        inputs = torch.randn(rows, steps, 16)
        mask = torch.arange(steps)[None] < torch.randint(1, steps + 1, (rows,))[:, None]
        with torch.no_grad():
            monkeypatch.setattr(onednn, "applies", lambda *args, **kwargs: False)
            assert stacked._route(0, inputs) == "bmm"
            expected = stacked(inputs, mask)
            monkeypatch.setattr(onednn, "applies", lambda *args, **kwargs: True)
            assert split._route(0, inputs) == "onednn"
            outputs = split(inputs, mask)
        for output, reference in zip(outputs, expected):
            assert_float32_close(output, reference, NETWORK)
    for state, reference in zip(split._states, stacked._states):
        assert_float32_close(state, reference, NETWORK)
