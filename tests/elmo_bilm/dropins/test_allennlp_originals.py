"""Issue 89: what AllenNLP 2.10's `tests/modules/elmo_test.py` asserts of `_ElmoBiLm` and
`_ElmoCharacterEncoder`, checked against the installed AllenNLP 2.10 on the project's bilm-tf
fixture: the same outputs (boundaries kept), the same state carried batch after batch, and
`vocab_to_cache` giving what the character ids give. Tolerance: `NETWORK` float32 units, as the
other comparisons with AllenNLP; a state not carried differs by far more (asserted). Below,
what AllenNLP 0.9's `allennlp/tests/commands/elmo_test.py` asserts of `ElmoEmbedder` (0.9 is not
installed: as its tests state it; its command's tests: tests/elmo_bilm/cli/test_embed.py)."""

from typing import List

import h5py
import numpy
import torch

from elmo_bilm import ElmoEmbedder, _ElmoBiLm, _ElmoCharacterEncoder, batch_to_ids
from tests.conftest import ELMO_FIXTURE, OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

FILES = (str(OPTIONS_FILE), str(WEIGHT_FILE))
BATCHES: List[List[List[str]]] = [
    [["The", "cat", "sat", "."], ["Dogs", "bark"], ["Hi"]],
    [["a", "b", "c"], ["x"], ["One", "more", "sentence", "!", "?"], ["y", "z"]],
]


def test_character_encoder_equals_allennlp_at_real_positions() -> None:
    from allennlp.modules.elmo import _ElmoCharacterEncoder as Theirs

    theirs, mine = Theirs(*FILES), _ElmoCharacterEncoder(*FILES)
    assert mine.get_output_dim() == theirs.get_output_dim()
    ids = batch_to_ids(BATCHES[0])
    with torch.no_grad():
        reference, output = theirs(ids), mine(ids)
    assert set(output) == {"token_embedding", "mask"}
    assert torch.equal(output["mask"], reference["mask"])  # <S> ... </S> per sentence
    assert output["token_embedding"].shape == reference["token_embedding"].shape
    mask = reference["mask"]
    assert_float32_close(
        output["token_embedding"][mask], reference["token_embedding"][mask], NETWORK
    )


def test_bilm_equals_allennlp_batch_after_batch_with_boundaries() -> None:
    from allennlp.modules.elmo import _ElmoBiLm as Theirs

    theirs, mine = Theirs(*FILES), _ElmoBiLm(*FILES)
    assert mine.num_layers == theirs.num_layers == 3
    assert mine.get_output_dim() == theirs.get_output_dim()
    for number, batch in enumerate(BATCHES):
        ids = batch_to_ids(batch)
        with torch.no_grad():
            reference, output = theirs(ids), mine(ids)
        assert set(output) == {"activations", "mask"}
        assert torch.equal(output["mask"], reference["mask"])
        assert output["mask"].shape[1] == ids.shape[1] + 2
        for layer, (got, want) in enumerate(zip(output["activations"], reference["activations"])):
            assert_float32_close(got, want, NETWORK, f"batch {number} layer {layer}")
    for got, want in zip(mine._elmo_lstm._states, theirs._elmo_lstm._states):
        assert_float32_close(got, want, NETWORK)
    # the state matters: after reset_states the second batch differs from AllenNLP's
    mine._elmo_lstm.reset_states()
    with torch.no_grad():
        fresh = mine(batch_to_ids(BATCHES[1]))["activations"][2]
        reference = theirs(batch_to_ids(BATCHES[1]))["activations"][2]
    assert (fresh - reference).abs().max().item() > 1e-3


def test_bilm_vocab_to_cache_equals_character_ids() -> None:
    from allennlp.modules.elmo import _ElmoBiLm as Theirs

    words = ["@@PADDING@@", "The", "cat", "sat", ".", "Dogs", "bark", "Hi"]
    index = {word: i for i, word in enumerate(words)}
    batch = BATCHES[0]
    word_ids = torch.zeros(len(batch), max(map(len, batch)), dtype=torch.long)
    for row, sentence in enumerate(batch):
        word_ids[row, : len(sentence)] = torch.tensor([index[w] for w in sentence])
    ids = batch_to_ids(batch)
    cached = _ElmoBiLm(*FILES, vocab_to_cache=words)
    plain = _ElmoBiLm(*FILES)
    theirs = Theirs(*FILES, vocab_to_cache=words)
    with torch.no_grad():
        by_word = cached(ids, word_ids)
        by_char = plain(ids)
        reference = theirs(ids, word_ids)
    assert torch.equal(by_word["mask"], by_char["mask"])
    for got, want, theirs_layer in zip(
        by_word["activations"], by_char["activations"], reference["activations"]
    ):
        assert_float32_close(got, want, NETWORK)
        assert_float32_close(got, theirs_layer, NETWORK)
    # word ids only (AllenNLP's tests pass `inputs` it then ignores): the same
    with torch.no_grad():
        cached._elmo_lstm.reset_states()
        alone = cached(torch.zeros_like(ids), word_ids)
    assert_float32_close(alone["activations"][2], by_word["activations"][2], NETWORK)


def test_elmo_embedder_embed_sentences_equals_bilm_tfs_reference(fixture_sentences) -> None:
    """0.9: the stateful `ElmoEmbedder` over the reference sentences, in bilm-tf's batches
    (batch b: sentence b of each of the three groups, group k in row k), gives each sentence's
    top layer as bilm-tf dumped it, batch after batch (states carried row by row)."""
    sentences, expected = [], []
    for number in range(len(fixture_sentences[0])):
        for group, sentences_of_group in enumerate(fixture_sentences):
            sentence = sentences_of_group[number]
            with h5py.File(ELMO_FIXTURE / f"lm_embeddings_{group}.hdf5", "r") as handle:
                forward, backward = handle[str(number)][:, : len(sentence)]
            sentences.append(sentence)
            expected.append(numpy.concatenate([forward, backward], -1))
    embedder = ElmoEmbedder(*FILES)
    embeddings = list(embedder.embed_sentences(sentences, len(fixture_sentences)))
    assert len(embeddings) == len(sentences)
    for number, (layers, want) in enumerate(zip(embeddings, expected)):
        assert layers.shape == (3, want.shape[0], 32)
        assert_float32_close(layers[2], want, NETWORK, f"sentence {number}")
    # the reference is stateful: without the states carried, a later batch differs
    fresh = ElmoEmbedder(*FILES, stateful=False).embed_sentence(sentences[-1])[2]
    assert numpy.abs(fresh - expected[-1]).max() > 1e-3


def test_elmo_embedder_empty_sentences_as_09s_tests_state() -> None:
    """0.9: an empty sentence embeds to no vectors, `(3, 0, dim)` (0.9 wrote `dim` 1024 whatever
    the biLM: here the biLM's own), and a batch holding one gives one result per sentence."""
    embedder = ElmoEmbedder(*FILES)
    assert embedder.embed_sentence([]).shape == (3, 0, 32)
    embeddings = list(embedder.embed_sentences(["This is a test".split(), []]))
    assert [e.shape for e in embeddings] == [(3, 4, 32), (3, 0, 32)]


def test_character_encoder_takes_an_empty_batch_as_the_bilm_does() -> None:
    """An empty batch (the last of a filtered dataset) gives empty outputs of the right widths,
    as `_ElmoBiLm`'s, not a RuntimeError from the word cache."""
    empty = torch.zeros(0, 3, 50, dtype=torch.long)
    encoder = _ElmoCharacterEncoder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    out = encoder(empty)
    width = encoder.get_output_dim()
    assert out["token_embedding"].shape == (0, 5, width) and out["mask"].shape == (0, 5)
    bilm = _ElmoBiLm(str(OPTIONS_FILE), str(WEIGHT_FILE))
    assert bilm(empty)["mask"].shape == (0, 5)
