"""ELMoForManyLangs' biLM as a model (`elmo_bilm.model.manylangs`, issue 80): the classes that
`elmo_bilm.formats.manylangs` builds from a folder (and still names), its ids as its
`create_one_batch` writes them, its word embedding through its own columns of the projection, its
`<bos>` / `<eos>` rows, and a biLM built from a config alone (no file, no `formats`). That its
layers equal ELMoForManyLangs' own is tests/elmo_bilm/formats/test_manylangs.py's."""

from pathlib import Path
from typing import Dict

import pytest
import torch

import elmo_bilm.formats.manylangs as formats_manylangs
import elmo_bilm.model.manylangs as model_manylangs
from elmo_bilm.formats.manylangs import load_manylangs
from elmo_bilm.model.char_cnn import CharCnnEncoder
from elmo_bilm.model.manylangs import (
    WORD_ID_BASE,
    CharVocabulary,
    ManyLangsBiLm,
    ManyLangsTokenEncoder,
)

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "elmoformanylangs"


def _dictionary(name: str, file_name: str) -> Dict[str, int]:
    lines = (FIXTURE / name / file_name).read_text("utf-8").splitlines()
    return {line.split("\t")[0]: int(line.split("\t")[1]) for line in lines}


@pytest.fixture(scope="module")
def word8() -> ManyLangsBiLm:
    return load_manylangs(str(FIXTURE / "word8"))


def test_the_format_module_names_the_model_classes():
    """One definition: `elmo_bilm.formats.manylangs`' names are the model's classes."""
    for name in ("CharVocabulary", "ManyLangsTokenEncoder", "ManyLangsBiLm", "WORD_ID_BASE"):
        assert getattr(formats_manylangs, name) is getattr(model_manylangs, name), name
        assert name in formats_manylangs.__all__
    assert formats_manylangs.ManyLangsBiLm is ManyLangsBiLm
    assert ManyLangsBiLm.__module__ == "elmo_bilm.model.manylangs"


@pytest.mark.parametrize("name, width", [("word8", 52), ("chars_only", 8)])
def test_load_manylangs_builds_the_model_classes(name, width):
    bilm = load_manylangs(str(FIXTURE / name))
    assert isinstance(bilm, model_manylangs.ManyLangsBiLm)
    assert isinstance(bilm.char_cnn, model_manylangs.ManyLangsTokenEncoder)
    assert isinstance(bilm.vocabulary, model_manylangs.CharVocabulary)
    assert bilm.vocabulary.width == width  # max_characters_per_token, then a word id's 2 columns
    assert (bilm.char_cnn.word_embedding is None) == (name == "chars_only")


def test_ids_follow_its_create_one_batch(word8):
    """`<eow>`'s id first and `<bow>`'s after the word (its order), unknown characters `<oov>`,
    over-long tokens cut to max_characters_per_token - 2, word ids in two columns, 0 padding."""
    chars = _dictionary("word8", "char.dic")
    ids = word8.batch_to_ids([["cat", "Xa"], ["x" * 60]])
    assert ids.shape == (2, 2, 52)
    assert ids[0, 0, :5].tolist() == [
        chars["<eow>"] + 1,
        chars["c"] + 1,
        chars["a"] + 1,
        chars["t"] + 1,
        chars["<bow>"] + 1,
    ]
    assert ids[0, 0, 5:50].eq(chars["<pad>"] + 1).all()
    assert ids[0, 1, 1].item() == chars["<oov>"] + 1
    assert ids[1, 0, 49].item() == chars["<bow>"] + 1  # 48 characters kept
    assert ids[1, 1].eq(0).all()
    words = _dictionary("word8", "word.dic")
    assert ids[0, 0, 50:].tolist() == [words["cat"] // 32768, words["cat"] % 32768]
    assert ids[0, 1, 51].item() == words["<oov>"]


def test_the_word_embedding_adds_through_its_own_columns(word8):
    """A token's vector is the char CNN's projection plus `W_w` times its word vector, the word
    id read from its two columns: tokens of the same characters and other word ids differ."""
    encoder = word8.char_cnn
    assert isinstance(encoder, ManyLangsTokenEncoder)
    assert encoder.word_embedding is not None and encoder.word_projection is not None
    words = _dictionary("word8", "word.dic")
    rows = word8.batch_to_ids([["cat", "dog"]])[0]
    with torch.no_grad():
        vectors = encoder.encode_words(rows)
        characters = CharCnnEncoder.encode_words(encoder, rows[:, : encoder.max_chars])
        ids = torch.tensor([words.get(t, words["<oov>"]) for t in ("cat", "dog")])
        expected = characters + encoder.word_projection(encoder.word_embedding(ids))
        torch.testing.assert_close(vectors, expected)
        other = rows[:1].clone()
        other[0, -2:] = torch.tensor([divmod(words["<pad>"], WORD_ID_BASE)])
        assert not torch.allclose(encoder.encode_words(other), vectors[:1])


def test_sentences_are_framed_by_its_bos_and_eos_rows(word8):
    vocabulary = word8.vocabulary
    ids = word8.batch_to_ids([["the", "cat"], ["a"]])
    framed, mask = word8.add_boundaries(ids, (ids > 0).any(-1))
    bos, eos = vocabulary.token_ids("<bos>"), vocabulary.token_ids("<eos>")
    assert framed.shape == (2, 4, 52)
    assert framed[0, 0].tolist() == bos and framed[1, 0].tolist() == bos
    assert framed[0, 3].tolist() == eos and framed[1, 2].tolist() == eos
    assert torch.equal(framed[0, 1:3], ids[0]) and torch.equal(framed[1, 1], ids[1, 0])
    assert framed[1, 3].eq(0).all()
    assert mask.tolist() == [[True] * 4, [True, True, True, False]]


def test_a_bilm_from_a_config_alone_runs():
    """The model needs no file and no `formats`: a config and two dictionaries build it."""
    config = {
        "token_embedder": {
            "char_dim": 3,
            "filters": [[1, 2], [2, 3]],
            "n_highway": 1,
            "activation": "tanh",
            "max_characters_per_token": 6,
            "word_dim": 2,
        },
        "encoder": {"dim": 5, "projection_dim": 4, "n_layers": 2, "cell_clip": 0, "proj_clip": 3},
    }
    specials = ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>")
    chars = {name: i for i, name in enumerate(specials + tuple("abc"))}
    words = {"<oov>": 0, "<pad>": 1, "ab": 2}
    bilm = ManyLangsBiLm(config, chars, words)
    assert isinstance(bilm.vocabulary, CharVocabulary)
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in bilm.parameters():
            parameter.normal_(0.0, 0.5)
    bilm.eval()
    ids = bilm.batch_to_ids([["ab", "abcabcabc", "z"], ["c"]])
    assert ids.shape == (2, 3, 8)
    with torch.no_grad():
        output = bilm(ids)
    assert bilm.num_layers == 3 and bilm.get_output_dim() == 8
    assert [tuple(layer.shape) for layer in output["activations"]] == [(2, 3, 8)] * 3
    assert all(torch.isfinite(layer).all() for layer in output["activations"])
    assert all(layer[1, 1:].eq(0).all() for layer in output["activations"])  # padding
    assert output["mask"].tolist() == [[True] * 3, [True, False, False]]
