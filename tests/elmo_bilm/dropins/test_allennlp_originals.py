"""Issue 89: what AllenNLP 2.10's `tests/modules/elmo_test.py` asserts of `_ElmoBiLm` and
`_ElmoCharacterEncoder`, checked against the installed AllenNLP 2.10 on the project's bilm-tf
fixture: the same outputs (boundaries kept), the same state carried batch after batch, and
`vocab_to_cache` giving what the character ids give. Tolerance: `NETWORK` float32 units, as the
other comparisons with AllenNLP; a state not carried differs by far more (asserted)."""

from typing import List

import torch

from elmo_bilm import _ElmoBiLm, _ElmoCharacterEncoder, batch_to_ids
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
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
