"""A string where a list of tokens belongs is its characters, one token each, as AllenNLP reads it
(issue 68): SeqVec calls `embed_sentence("MKTAYIAK...")` and gets one vector per residue. Text
with spaces is warned about once per process; a protein string is not."""

import warnings

import numpy
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids
from elmo_bilm.model import characters
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))

# a 76-residue protein: the old hint's `.split()` made it one token, cut to 48 characters
PROTEIN = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKW"


@pytest.fixture(scope="module")
def embedder():
    return ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE), stateful=False)


@pytest.fixture
def fresh_warning(monkeypatch):
    """The once-per-process warning not yet given, every warning recorded."""
    monkeypatch.setattr(characters, "_warned_text_as_characters", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def text_warnings(caught):
    return [w for w in caught if "character by character" in str(w.message)]


def test_batch_to_ids_equals_allennlps_on_strings(fresh_warning):
    from allennlp.modules.elmo import batch_to_ids as allennlp_batch_to_ids

    batches = [
        [PROTEIN],
        [PROTEIN, "MKT", ["the", "cat"]],  # strings and token lists mixed
        ["The cat sat", "é€😀"],  # spaces are tokens; multi-byte characters
        ["", "A"],
    ]
    for batch in batches:
        ours = batch_to_ids(batch)
        assert torch.equal(ours, allennlp_batch_to_ids(batch)), batch
        assert torch.equal(
            ours, batch_to_ids([list(s) if isinstance(s, str) else s for s in batch])
        )
    assert batch_to_ids([PROTEIN]).shape == (1, 76, 50)


def test_embed_sentence_of_a_protein_string_is_residue_by_residue(embedder, fresh_warning):
    vectors = embedder.embed_sentence(PROTEIN)
    assert vectors.shape == (3, 76, 32)
    numpy.testing.assert_array_equal(vectors, embedder.embed_sentence(list(PROTEIN)))
    assert text_warnings(fresh_warning) == []  # no spaces: no warning


def test_every_embedder_method_takes_strings(embedder, fresh_warning):
    proteins = [PROTEIN, "MKV", PROTEIN[:40]]
    lists = [list(p) for p in proteins]
    for got, want in zip(embedder.embed_batch(proteins), embedder.embed_batch(lists)):
        numpy.testing.assert_array_equal(got, want)
    for got, want in zip(embedder.embed_sentences(proteins), embedder.embed_sentences(lists)):
        numpy.testing.assert_array_equal(got, want)
    activations, mask = embedder.batch_to_embeddings(proteins)
    assert activations.shape == (3, 3, 76, 32) and mask.sum(-1).tolist() == [76, 3, 40]
    assert torch.equal(activations, embedder.batch_to_embeddings(lists)[0])
    assert text_warnings(fresh_warning) == []


def test_elmo_through_batch_to_ids_of_strings():
    # two fresh (stateful, as AllenNLP's) Elmos: each call is a first call, from zero states
    got = Elmo(*FILES, 1, dropout=0.0)(batch_to_ids([PROTEIN, "MKV"]))
    want = Elmo(*FILES, 1, dropout=0.0)(batch_to_ids([list(PROTEIN), list("MKV")]))
    assert torch.equal(got["elmo_representations"][0], want["elmo_representations"][0])
    assert got["mask"].sum(-1).tolist() == [76, 3]


def test_text_with_spaces_is_warned_about_once(embedder, fresh_warning):
    assert embedder.embed_sentence("The cat sat").shape == (3, 11, 32)  # 11 characters
    batch_to_ids(["a b", "c d"])
    embedder.embed_batch(["x y"])
    (warning,) = text_warnings(fresh_warning)
    assert "'The cat sat'" in str(warning.message) and "given once" in str(warning.message)
    assert warning.filename == __file__  # names the caller's line, not the package's


def test_a_bare_string_batch_is_still_refused_without_the_split_hint():
    for call in (batch_to_ids, ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_batch):
        with pytest.raises(TypeError, match=r"one sentence is \[sentence\]") as error:
            call(PROTEIN)
        assert ".split()" not in str(error.value)
    with pytest.raises(TypeError, match="token 1 is int"):
        batch_to_ids([["a", 1]])
