import torch
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm.characters import batch_char_ids


def test_same_ids_as_allennlp(fixture_sentences):
    sentences = fixture_sentences[0] + [
        ["<S>", "</S>", "naïve", "東京", "x" * 70, "é" * 30],  # specials, UTF-8, truncation
        ["a"],
    ]
    assert torch.equal(batch_char_ids(sentences), batch_to_ids(sentences))
