"""`elmo_bilm.Elmo` / `ElmoEmbedder` against AllenNLP itself, argument by argument.

Every `Elmo` argument and combination a script can pass is run through AllenNLP 2.10's `Elmo`
and ours, both fresh (and both stateful, ours by default as AllenNLP's: later calls are compared
in test_dropin_defaults.py), on the same bilm-tf fixture weights and inputs; outputs, masks and,
with `requires_grad`, gradients must agree within float32 rounding of a whole biLM pass
(`tests.numerics.NETWORK`). `ElmoEmbedder`'s methods are compared with AllenNLP 0.9's method
bodies run over AllenNLP 2.10's `_ElmoBiLm` (0.9 itself no longer installs), stateful as 0.9's
was, call after call.
"""

import copy
import pickle
from typing import Any, Dict, List, Optional

import h5py
import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids, load_bilm_tf
from elmo_bilm.utils.errors import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

# make test reruns it on AVX2 kernels and on an emulated AVX2 CPU (MKL's own AVX2 products there)
pytestmark = [pytest.mark.numerics, pytest.mark.emulated_cpu]

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
# an empty sentence, one-token sentences and a longer one in one batch
SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], [], ["Hi"], ["A", "b", "c"], ["x"]]
VOCABULARY = ["@@PADDING@@", "The", "cat", "sat", "on", "the", "mat", ".", "Hi", "A", "b", "c", "x"]


def allennlp_elmo(**kwargs: Any) -> torch.nn.Module:
    from allennlp.modules.elmo import Elmo as AllenNlpElmo

    return AllenNlpElmo(*FILES, **kwargs)


def assert_same_outputs(ours: Dict[str, Any], theirs: Dict[str, Any]) -> None:
    assert ours["mask"].shape == theirs["mask"].shape
    assert torch.equal(ours["mask"].bool(), theirs["mask"].bool())
    assert len(ours["elmo_representations"]) == len(theirs["elmo_representations"])
    for mine, reference in zip(ours["elmo_representations"], theirs["elmo_representations"]):
        assert_float32_close(mine, reference, NETWORK)  # padded positions included


@pytest.mark.parametrize("num_output_representations", [1, 2, 3])
@pytest.mark.parametrize("do_layer_norm", [False, True])
@pytest.mark.parametrize("keep_sentence_boundaries", [False, True])
@pytest.mark.parametrize("scalar_mix_parameters", [None, [1, 0, 2], [0.5, -1.0, 0.25]])
def test_elmo_equals_allennlp(
    num_output_representations: int,
    do_layer_norm: bool,
    keep_sentence_boundaries: bool,
    scalar_mix_parameters: Optional[List[float]],
) -> None:
    kwargs = dict(
        num_output_representations=num_output_representations,
        do_layer_norm=do_layer_norm,
        dropout=0.0,
        keep_sentence_boundaries=keep_sentence_boundaries,
        scalar_mix_parameters=scalar_mix_parameters,
    )
    ids = batch_to_ids(SENTENCES)
    assert_same_outputs(Elmo(*FILES, **kwargs)(ids), allennlp_elmo(**kwargs)(ids))


def test_layer_norm_statistics_include_the_sentence_boundaries_and_padding_stays_zero() -> None:
    # AllenNLP standardises each layer over the sentences with their <S> and </S> and then drops
    # those positions into zeros; mixing without them gave other vectors (0.35 off near 3.7)
    ours = Elmo(*FILES, 1, dropout=0.0, do_layer_norm=True)(batch_to_ids(SENTENCES))
    theirs = allennlp_elmo(num_output_representations=1, dropout=0.0, do_layer_norm=True)(
        batch_to_ids(SENTENCES)
    )
    vectors = ours["elmo_representations"][0]
    assert torch.all(vectors[~ours["mask"]] == 0)
    assert_float32_close(vectors, theirs["elmo_representations"][0], NETWORK)


def test_dropout_is_off_in_eval_mode() -> None:
    ids = batch_to_ids(SENTENCES)
    ours, theirs = (
        Elmo(*FILES, 2, dropout=0.5).eval(),
        allennlp_elmo(num_output_representations=2, dropout=0.5).eval(),
    )
    assert_same_outputs(ours(ids), theirs(ids))


@pytest.mark.parametrize("leading", [(2, 3), (3,)])
def test_character_ids_with_extra_leading_dimensions(leading) -> None:
    # (batch, n, T, 50): AllenNLP reshapes to (batch * n, T, 50) and gives the shape back
    n = int(numpy.prod(leading))
    sentences = (SENTENCES * n)[:n]
    ids = batch_to_ids(sentences).reshape(*leading, -1, 50)
    for do_layer_norm in (False, True):
        kwargs = dict(num_output_representations=2, dropout=0.0, do_layer_norm=do_layer_norm)
        ours, theirs = Elmo(*FILES, **kwargs)(ids), allennlp_elmo(**kwargs)(ids)
        assert ours["mask"].shape == ids.shape[:-1]
        assert ours["elmo_representations"][0].shape == ids.shape[:-1] + (32,)
        assert_same_outputs(ours, theirs)


def word_ids(sentences: List[List[str]]) -> torch.Tensor:
    longest = max(len(sentence) for sentence in sentences)
    return torch.tensor(
        [[VOCABULARY.index(w) for w in s] + [0] * (longest - len(s)) for s in sentences]
    )


@pytest.mark.parametrize("with_word_inputs", [False, True])
@pytest.mark.parametrize("do_layer_norm", [False, True])
def test_vocab_to_cache(with_word_inputs: bool, do_layer_norm: bool) -> None:
    kwargs = dict(
        num_output_representations=1,
        dropout=0.0,
        vocab_to_cache=VOCABULARY,
        do_layer_norm=do_layer_norm,
    )
    ids, words = batch_to_ids(SENTENCES), word_ids(SENTENCES)
    arguments = (ids, words) if with_word_inputs else (ids,)
    assert_same_outputs(Elmo(*FILES, **kwargs)(*arguments), allennlp_elmo(**kwargs)(*arguments))


def test_word_inputs_with_an_extra_leading_dimension() -> None:
    kwargs = dict(num_output_representations=1, dropout=0.0, vocab_to_cache=VOCABULARY)
    ids = batch_to_ids(SENTENCES[:4]).reshape(2, 2, -1, 50)
    words = word_ids(SENTENCES[:4]).reshape(2, 2, -1)
    ours, theirs = Elmo(*FILES, **kwargs)(ids, words), allennlp_elmo(**kwargs)(ids, words)
    assert ours["mask"].shape == (2, 2, 7)
    assert_same_outputs(ours, theirs)


def test_word_inputs_without_a_cached_vocabulary_are_ignored_with_a_warning() -> None:
    ids, words = batch_to_ids(SENTENCES), word_ids(SENTENCES)
    elmo = Elmo(*FILES, 1, dropout=0.0)
    with pytest.warns(UserWarning, match="vocab_to_cache"):
        ours = elmo(ids, words)
    theirs = allennlp_elmo(num_output_representations=1, dropout=0.0)(ids, words)
    assert_same_outputs(ours, theirs)


@pytest.mark.parametrize("do_layer_norm", [False, True])
def test_requires_grad_gives_allennlps_gradients(do_layer_norm: bool) -> None:
    kwargs = dict(
        num_output_representations=2, dropout=0.0, requires_grad=True, do_layer_norm=do_layer_norm
    )
    ours, theirs = Elmo(*FILES, **kwargs), allennlp_elmo(**kwargs)
    ids = batch_to_ids(SENTENCES)
    for model in (ours, theirs):
        out = model(ids)["elmo_representations"]
        weights = torch.randn(out[0].shape, generator=torch.Generator().manual_seed(0))
        sum(((rep * weights * (k + 1)).sum() for k, rep in enumerate(out))).backward()
    ours_named = dict(ours.named_parameters())
    pairs = {
        "scalar_mixes.0.gamma": "scalar_mix_0.gamma",
        "scalar_mixes.1.scalar_parameters.2": "scalar_mix_1.scalar_parameters.2",
        "bilm.char_cnn.char_embedding.weight": "_elmo_lstm._token_embedder._char_embedding_weights",
        "bilm.char_cnn.convolutions.2.weight": "_elmo_lstm._token_embedder.char_conv_2.weight",
        "bilm.char_cnn.projection.weight": "_elmo_lstm._token_embedder._projection.weight",
    }
    theirs_named = dict(theirs.named_parameters())
    for mine, reference in pairs.items():
        assert ours_named[mine].grad is not None, mine
        assert_float32_close(ours_named[mine].grad, theirs_named[reference].grad, NETWORK, mine)


def test_module_argument_takes_a_bilm_in_memory() -> None:
    from allennlp.modules.elmo import _ElmoBiLm

    ids = batch_to_ids(SENTENCES)
    ours = Elmo(module=load_bilm_tf(*FILES), num_output_representations=2, dropout=0.0)
    theirs = allennlp_elmo_with_module(_ElmoBiLm(*FILES))
    assert_same_outputs(ours(ids), theirs(ids))


def allennlp_elmo_with_module(module: torch.nn.Module) -> torch.nn.Module:
    from allennlp.modules.elmo import Elmo as AllenNlpElmo

    return AllenNlpElmo(None, None, 2, dropout=0.0, module=module)


# ---- ElmoEmbedder against AllenNLP 0.9's methods over AllenNLP 2.10's biLM


class AllenNlp09Embedder:
    """AllenNLP 0.9's `ElmoEmbedder` methods in outline (`batch_to_embeddings`: the biLM's
    layers less the sentence boundaries, stacked on dim 1; `embed_batch`: each sentence cut to its
    length, float64 zeros `(3, 0, dim)` for an empty one; `embed_sentences`: groups of
    `batch_size` in input order) over 2.10's `_ElmoBiLm`, stateful as 0.9's: its states carried
    from batch to batch (issue 80: the reference reset them before each batch while this
    project's embedder was stateless by default)."""

    def __init__(self) -> None:
        from allennlp.modules.elmo import _ElmoBiLm

        self.bilm = _ElmoBiLm(*FILES).eval()

    def batch_to_embeddings(self, batch: List[List[str]]):
        from allennlp.nn.util import remove_sentence_boundaries

        with torch.no_grad():
            output = self.bilm(batch_to_ids(batch))
        pieces = [
            remove_sentence_boundaries(layer, output["mask"]) for layer in output["activations"]
        ]
        return torch.cat([piece[0].unsqueeze(1) for piece in pieces], dim=1), pieces[0][1]

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        activations, mask = self.batch_to_embeddings(batch)
        out = []
        for row in range(len(batch)):
            length = int(mask[row].sum())
            out.append(activations[row, :, :length].numpy() if length else numpy.zeros((3, 0, 32)))
        return out

    def embed_sentences(self, sentences: List[List[str]], batch_size: int) -> List[numpy.ndarray]:
        out: List[numpy.ndarray] = []
        for start in range(0, len(sentences), batch_size):
            out += self.embed_batch(sentences[start : start + batch_size])
        return out


def test_elmo_embedder_methods_equal_allennlp_09s() -> None:
    ours, theirs = ElmoEmbedder(*FILES), AllenNlp09Embedder()
    activations, mask = ours.batch_to_embeddings(SENTENCES)
    expected, expected_mask = theirs.batch_to_embeddings(SENTENCES)
    assert torch.equal(mask.bool(), expected_mask.bool())
    assert_float32_close(activations, expected, NETWORK)
    for got, reference in zip(ours.embed_batch(SENTENCES), theirs.embed_batch(SENTENCES)):
        assert got.shape == reference.shape
        assert_float32_close(got, reference, NETWORK)
    assert_float32_close(
        ours.embed_sentence(SENTENCES[0]), theirs.embed_batch(SENTENCES[:1])[0], NETWORK
    )
    lazy = list(ours.embed_sentences(iter(SENTENCES), batch_size=2))
    for got, reference in zip(lazy, theirs.embed_sentences(SENTENCES, 2), strict=True):
        assert got.shape == reference.shape
        assert_float32_close(got, reference, NETWORK)


def test_embed_file_replaces_an_existing_output_as_allennlp_09(tmp_path) -> None:
    source, output = tmp_path / "in.txt", tmp_path / "out.hdf5"
    source.write_text("The cat sat .\nHi\n")
    output.write_bytes(b"an old file")
    embedder = ElmoEmbedder(*FILES)
    embedder.embed_file(str(source), str(output), output_format="top")
    with h5py.File(output, "r") as handle:
        assert_float32_close(
            handle["0"][...],
            AllenNlp09Embedder().embed_batch([["The", "cat", "sat", "."]])[0][-1],
            NETWORK,
        )


def test_allennlp_09_module_constants() -> None:
    import inspect

    from allennlp.modules.token_embedders.elmo_token_embedder import ElmoTokenEmbedder

    from elmo_bilm import DEFAULT_BATCH_SIZE, DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE

    defaults = inspect.signature(ElmoTokenEmbedder.__init__).parameters  # AllenNLP's `original`
    assert DEFAULT_OPTIONS_FILE == defaults["options_file"].default
    assert DEFAULT_WEIGHT_FILE == defaults["weight_file"].default
    assert DEFAULT_BATCH_SIZE == 64
    assert inspect.signature(ElmoEmbedder.embed_sentences).parameters["batch_size"].default == 64


def test_cuda_device_is_read_on_every_batch() -> None:
    embedder = ElmoEmbedder(*FILES)
    assert embedder.device == torch.device("cpu")
    embedder.cuda_device = 0  # as code that moves a loaded embedder does
    if torch.cuda.is_available():
        assert embedder.device == torch.device("cuda:0")
    else:  # the inputs would go to cuda:0: one line, not the driver's error
        with pytest.raises(UsageError, match="device 0: no CUDA device is available"):
            embedder.batch_to_embeddings([["a"]])
    embedder.cuda_device = -1
    assert embedder.batch_to_embeddings([["a"]])[0].device.type == "cpu"


class FlairStyleElmoEmbeddings:
    """What flair's legacy `ELMoEmbeddings` does with the embedder it pickles inside a model: on
    unpickling it sets `cuda_device`, moves `elmo_bilm` and moves the carried LSTM states of
    `elmo_bilm._elmo_lstm._states` to flair's device."""

    def __init__(self, embedder: ElmoEmbedder) -> None:
        self.ee = embedder

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__ = state
        device = torch.device("cpu")
        self.ee.cuda_device = -1
        self.ee.elmo_bilm.to(device=device)
        lstm = self.ee.elmo_bilm._elmo_lstm
        lstm._states = tuple(state.to(device) for state in lstm._states)


def test_flair_style_pickle_round_trip_and_deepcopy() -> None:
    embedder = ElmoEmbedder(*FILES, stateful=False)  # what flair's legacy pickles hold
    expected = embedder.embed_sentence(SENTENCES[0])
    loaded = pickle.loads(pickle.dumps(FlairStyleElmoEmbeddings(embedder)))
    assert loaded.ee.elmo_bilm._elmo_lstm._states == ()  # stateless: nothing carried
    loaded.ee.elmo_bilm._elmo_lstm.reset_states()
    assert numpy.array_equal(loaded.ee.embed_sentence(SENTENCES[0]), expected)
    assert numpy.array_equal(copy.deepcopy(embedder).embed_sentence(SENTENCES[0]), expected)
    with pytest.raises(ValueError, match="stateless"):
        loaded.ee.elmo_bilm._elmo_lstm._states = (torch.zeros(1),)

    # stateful (the default): a copy carries the states, and goes on as the original does
    stateful = ElmoEmbedder(*FILES)
    stateful.embed_sentence(SENTENCES[0])
    loaded = pickle.loads(pickle.dumps(FlairStyleElmoEmbeddings(stateful)))
    assert len(loaded.ee.elmo_bilm._elmo_lstm._states) == 2  # (h, c), moved by flair's code
    copied = copy.deepcopy(stateful)
    following = stateful.embed_sentence(SENTENCES[0])
    assert numpy.abs(following - expected).max() > 1e-3  # the carried state shows
    assert numpy.array_equal(loaded.ee.embed_sentence(SENTENCES[0]), following)
    assert numpy.array_equal(copied.embed_sentence(SENTENCES[0]), following)

    elmo = Elmo(*FILES, 2, dropout=0.0)  # stateful, as AllenNLP's: copies carry the states
    ids = batch_to_ids(SENTENCES)
    elmo(ids)
    copies = (pickle.loads(pickle.dumps(elmo)), copy.deepcopy(elmo))
    reference = elmo(ids)
    for copied_elmo in copies:
        assert_same_outputs(copied_elmo(ids), reference)
