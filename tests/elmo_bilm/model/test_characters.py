import torch
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm import batch_to_ids as ours_batch_to_ids
from elmo_bilm.model.characters import batch_char_ids


def test_same_ids_as_allennlp(fixture_sentences):
    sentences = fixture_sentences[0] + [
        ["<S>", "</S>", "naïve", "東京", "x" * 70, "é" * 30],  # specials, UTF-8, truncation
        ["a"],
    ]
    assert torch.equal(batch_char_ids(sentences), batch_to_ids(sentences))


def test_elmo_character_mapper_is_allennlps():
    """Every constant and `convert_word_to_char_ids`, called AllenNLP 0.9's way (on the class)
    and 2.x's (on an instance, with `tokens_to_add`), against AllenNLP's own mapper."""
    from allennlp.data.token_indexers.elmo_indexer import ELMoCharacterMapper as Theirs

    from elmo_bilm import ELMoCharacterMapper as Ours

    for name in (
        "max_word_length",
        "beginning_of_sentence_character",
        "end_of_sentence_character",
        "beginning_of_word_character",
        "end_of_word_character",
        "padding_character",
        "beginning_of_sentence_characters",
        "end_of_sentence_characters",
        "bos_token",
        "eos_token",
    ):
        assert getattr(Ours, name) == getattr(Theirs, name), name
    words = ["cat", "<S>", "</S>", "é" * 40, "", "x" * 60, "@@PADDING@@", "日本"]
    for word in words:
        expected = Theirs().convert_word_to_char_ids(word)
        assert Ours.convert_word_to_char_ids(word) == expected  # 0.9: a static method
        assert Ours().convert_word_to_char_ids(word) == expected
    added = {"<MASK>": 261}
    assert Ours(added).convert_word_to_char_ids("<MASK>") == Theirs(added).convert_word_to_char_ids(
        "<MASK>"
    )
    assert Ours(added) == Ours(added) and Ours(added) != Ours()


# Issue 89: what AllenNLP 2.10's tests/data/token_indexers/elmo_indexer_test.py asserts of
# `ELMoTokenCharactersIndexer`, checked against the installed indexer itself: this package's
# `batch_to_ids` (and its mapper) give the indexer's ids for the same words.


def _indexer_ids(words, tokens_to_add=None):
    """The installed AllenNLP indexer's ids of `words` (its `elmo_tokens` key)."""
    from allennlp.data import Token, Vocabulary
    from allennlp.data.token_indexers import ELMoTokenCharactersIndexer

    indexer = ELMoTokenCharactersIndexer(tokens_to_add=tokens_to_add)
    indices = indexer.tokens_to_indices([Token(w) for w in words], Vocabulary())
    assert list(indices) == ["elmo_tokens"]  # the one key the token embedder's forward takes
    return indices["elmo_tokens"]


def test_character_ids_of_words_are_the_indexers():
    """Boundary tokens, a character outside Latin-1 (two UTF-8 bytes), ordinary words and one
    cut at 50: each word's 50 ids, begin-of-word, its UTF-8 bytes + 1, end-of-word, padding."""
    from elmo_bilm import ELMoCharacterMapper as Mapper

    words = ["<S>", "</S>", chr(256) + "t", "Second", ".", "y" * 80]
    ours = ours_batch_to_ids([words])[0].tolist()
    assert ours == _indexer_ids(words)
    for ids in ours:
        assert len(ids) == Mapper.max_word_length == 50
        assert ids[0] == Mapper.beginning_of_word_character + 1
    bos, eos = ours[0], ours[1]  # one reserved character each, not the bytes of "<S>"
    assert bos[1] == Mapper.beginning_of_sentence_character + 1 and bos[2] == 260
    assert eos[1] == Mapper.end_of_sentence_character + 1 and eos[2] == 260
    utf8 = list(words[2].encode("utf-8"))
    assert ours[2][1 : 1 + len(utf8)] == [b + 1 for b in utf8] and len(utf8) == 3
    assert set(ours[3][8:]) == {Mapper.padding_character + 1}  # after "Second" and its end
    assert ours[5][-1] == 260  # a long word keeps its end-of-word mark in the last place


def test_padding_to_more_tokens_is_rows_of_zeros_as_the_indexers():
    from allennlp.data import Token, Vocabulary
    from allennlp.data.token_indexers import ELMoTokenCharactersIndexer

    indexer = ELMoTokenCharactersIndexer()
    indices = indexer.tokens_to_indices([Token("Second"), Token(".")], Vocabulary())
    padded = indexer.as_padded_tensor_dict(indices, padding_lengths={"elmo_tokens": 3})
    ours = ours_batch_to_ids([["Second", "."], ["a", "longer", "one"]])[0]
    assert torch.equal(ours, padded["elmo_tokens"])
    assert not ours[2].any()  # the padding token: 50 zeros, not padding characters


def test_added_tokens_take_their_own_character_as_the_indexers():
    """`tokens_to_add={"<first>": 1}`: the word is one character, id 1 (+1), between the
    word's begin and end marks, where the indexer puts it."""
    from elmo_bilm import ELMoCharacterMapper

    ours = ELMoCharacterMapper(tokens_to_add={"<first>": 1}).convert_word_to_char_ids("<first>")
    assert [ours] == _indexer_ids(["<first>"], tokens_to_add={"<first>": 1})
    assert ours[:3] == [259, 2, 260]
    assert ELMoCharacterMapper().convert_word_to_char_ids("<first>")[1] != 2  # else: its bytes


def test_empty_token_lists_are_zeros_as_the_indexers():
    """The indexer's empty list is `{"elmo_tokens": []}` and an empty text field in a batch
    pads to zero rows; `batch_to_ids` gives an empty sentence's row zeros, and equals
    AllenNLP's `batch_to_ids` on a batch holding one."""
    from allennlp.data.token_indexers import ELMoTokenCharactersIndexer
    from allennlp.modules.elmo import batch_to_ids as theirs

    assert ELMoTokenCharactersIndexer().get_empty_token_list() == {"elmo_tokens": []}
    # no token at all: (1, 0, 50) and (0, 0, 50), where AllenNLP's gives (1, 0) and fails on []
    assert ours_batch_to_ids([[]]).shape == (1, 0, 50)
    assert ours_batch_to_ids([]).shape == (0, 0, 50)
    batch = [["Screen", "device"], [], ["Apple"]]
    ours = ours_batch_to_ids(batch)
    assert torch.equal(ours, theirs(batch))
    assert not ours[1].any() and all(ours[0].any(-1)) and ours[2, 0].any()
