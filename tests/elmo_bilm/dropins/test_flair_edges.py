"""flair's ELMoEmbeddings on edge inputs: a batch holding an empty sentence embeds the others in
every mode ("all" reshaped an empty sentence's layers to an unknown width and raised)."""

import pytest

flair = pytest.importorskip("flair")

from flair.data import Sentence  # noqa: E402

from elmo_bilm.dropins.flair import ELMoEmbeddings  # noqa: E402
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE  # noqa: E402


@pytest.mark.parametrize("mode", ["all", "top", "average"])
def test_a_batch_with_an_empty_sentence_embeds(mode: str) -> None:
    embeddings = ELMoEmbeddings(
        options_file=str(OPTIONS_FILE), weight_file=str(WEIGHT_FILE), embedding_mode=mode
    )
    sentences = [Sentence("The cat sat ."), Sentence(""), Sentence("Birds fly .")]
    embeddings.embed(sentences)
    for sentence in sentences:
        for token in sentence:
            assert token.get_embedding().shape == (embeddings.embedding_length,)
    assert len(sentences[1]) == 0
