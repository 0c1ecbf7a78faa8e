import torch
from allennlp.modules.elmo import batch_to_ids

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
