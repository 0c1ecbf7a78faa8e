"""`elmo_bilm.dropins.allennlp` under careless calls (issue 80's sweep): a biLM handed over with
its precision set keeps it, a string where sentences belong is refused by every method alike,
and a bad token budget is refused whatever the mode."""

import warnings

import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, _ElmoBiLm, load_bilm_tf
from elmo_bilm.runtime.precision import set_precision
from elmo_bilm.utils.errors import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
SENTENCES = [["the", "cat", "sat"], ["a", "dog"]]


def int8_bilm():
    return set_precision(load_bilm_tf(*FILES), "int8")


def precision_of(bilm) -> str:
    return bilm.char_cnn.precision


@pytest.mark.parametrize(
    "wrap",
    [
        lambda bilm: ElmoEmbedder.from_bilm(bilm).elmo_bilm,
        lambda bilm: ElmoEmbedder(module=bilm).elmo_bilm,
        lambda bilm: ElmoEmbedder.from_bilm(bilm, stateful=False).elmo_bilm,
        lambda bilm: Elmo(module=bilm).bilm,
    ],
    ids=["from_bilm", "ElmoEmbedder(module=)", "from_bilm stateless", "Elmo(module=)"],
)
def test_a_biLM_handed_over_keeps_its_precision(wrap) -> None:
    bilm = int8_bilm()
    expected = ElmoEmbedder(module=int8_bilm(), stateful=False).embed_sentence(SENTENCES[0])
    wrapped = wrap(bilm)
    assert wrapped is bilm and precision_of(bilm) == "int8"
    assert bilm.lstm.products is not None
    got = ElmoEmbedder(module=bilm, stateful=False).embed_sentence(SENTENCES[0])
    assert numpy.array_equal(got, expected)


def test_a_precision_given_with_a_module_is_set_and_files_default_to_float32() -> None:
    assert precision_of(ElmoEmbedder(module=int8_bilm(), precision="float32").elmo_bilm) == (
        "float32"
    )
    assert precision_of(Elmo(module=int8_bilm(), precision="float32").bilm) == "float32"
    assert precision_of(ElmoEmbedder(module=load_bilm_tf(*FILES), precision="int8").elmo_bilm) == (
        "int8"
    )
    assert precision_of(ElmoEmbedder(*FILES).elmo_bilm) == "float32"
    with pytest.raises(UsageError, match="precision must be one of"):
        ElmoEmbedder(module=load_bilm_tf(*FILES), precision="fp8")


@pytest.mark.parametrize("stateful", [True, False])
def test_a_string_where_sentences_belong_is_refused_by_embed_sentences_too(stateful) -> None:
    embedder = ElmoEmbedder(*FILES, stateful=stateful)
    with pytest.raises(TypeError, match="got the string 'the cat'"):
        embedder.embed_batch("the cat")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got the string 'the cat'"):
        list(embedder.embed_sentences("the cat"))  # type: ignore[arg-type]
    # a string sentence in a list is still its characters, as AllenNLP reads it
    (vectors,) = embedder.embed_sentences(["cat"])
    assert vectors.shape[1] == 3


@pytest.mark.parametrize("max_tokens", [0, -1, 2.5, float("nan"), "8", True])
@pytest.mark.parametrize("stateful", [True, False])
def test_a_bad_token_budget_is_refused_in_either_mode(stateful, max_tokens) -> None:
    embedder = ElmoEmbedder(*FILES, stateful=stateful)
    with pytest.raises(UsageError, match="max_tokens must be a whole number"):
        list(embedder.embed_sentences(SENTENCES, 2, max_tokens))


def test_a_bfloat16_biLM_handed_over_is_left_as_it_is() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without bfloat16 products falls back to float32
        bilm = set_precision(load_bilm_tf(*FILES), "bfloat16")
    before = precision_of(bilm)
    assert precision_of(ElmoEmbedder.from_bilm(bilm).elmo_bilm) == before


@pytest.mark.parametrize(
    "make",
    [
        lambda value: ElmoEmbedder.from_bilm(value),
        lambda value: ElmoEmbedder(module=value),
        lambda value: Elmo(module=value),
    ],
    ids=["from_bilm", "ElmoEmbedder(module=)", "Elmo(module=)"],
)
@pytest.mark.parametrize("value", ["wikipedia", torch.nn.Linear(2, 2)], ids=["name", "Linear"])
def test_what_is_not_a_biLM_where_one_belongs_is_one_line(make, value) -> None:
    """Issue 88: a name or another module ended in an AttributeError deep in the embedder."""
    with pytest.raises(UsageError, match="must be a BiLm in memory") as caught:
        make(value)
    assert "\n" not in str(caught.value)


def test_from_bilm_of_none_is_refused_not_read_as_the_default_biLM() -> None:
    """Issue 88: `from_bilm(None)` (a biLM variable left unset) downloaded AllenNLP's default."""
    with pytest.raises(UsageError, match="from_bilm's bilm must be a BiLm .*, got NoneType"):
        ElmoEmbedder.from_bilm(None)  # type: ignore[arg-type]


def test_elmo_takes_allennlps_elmo_bilm_as_its_module() -> None:
    """AllenNLP's `Elmo(module=...)` takes an `_ElmoBiLm`: the biLM it wraps is used."""
    wrapped = _ElmoBiLm(str(OPTIONS_FILE), str(WEIGHT_FILE))
    assert Elmo(module=wrapped).bilm is wrapped.bilm


@pytest.mark.parametrize(
    "call",
    [
        lambda embedder: embedder.embed_sentence(None),
        lambda embedder: embedder.embed_sentence(5),
        lambda embedder: embedder.embed_batch([["a"], None]),
        lambda embedder: list(embedder.embed_sentences([["a"], None])),
        lambda embedder: embedder.embed_batch(None),
        lambda embedder: list(embedder.embed_sentences(7)),
    ],
    ids=[
        "sentence None",
        "sentence 5",
        "batch [.., None]",
        "sentences [.., None]",
        "batch None",
        "sentences 7",
    ],
)
def test_what_is_no_sentence_is_one_line(call) -> None:
    """Issue 88: `embed_sentence(None)` was `object of type 'NoneType' has no len()` from the
    batching, far from the call."""
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    with pytest.raises(
        TypeError, match="a sentence must be a list of tokens|expected a batch of sentences"
    ) as caught:
        call(embedder)
    assert "\n" not in str(caught.value) and "len()" not in str(caught.value)
