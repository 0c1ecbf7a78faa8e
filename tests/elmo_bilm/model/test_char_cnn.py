import copy
import pickle

import pytest
import torch
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm.model import char_cnn, onednn
from elmo_bilm.model.char_cnn import PADDING_CHAR, CharCnnEncoder
from tests.numerics import NETWORK, assert_float32_close

# compared across rounding paths: make test reruns it on AVX2 kernels and on an emulated AVX2 CPU
pytestmark = [pytest.mark.numerics, pytest.mark.emulated_cpu]


def make_encoder(**kwargs) -> CharCnnEncoder:
    torch.manual_seed(0)
    encoder = CharCnnEncoder(
        4, [[1, 4], [2, 8], [3, 8], [7, 4]], n_highway=1, projection_dim=6, **kwargs
    )
    with torch.no_grad():
        encoder.char_embedding.weight.normal_()
        encoder.char_embedding.weight[PADDING_CHAR + 1] = (
            3.0  # windows of padding often win the max-pool
        )
    return encoder.eval()


def full_length_reference(encoder: CharCnnEncoder, ids: torch.Tensor) -> torch.Tensor:
    """Convolutions over all 50 character positions, no shortcuts."""
    chars = encoder.char_embedding(ids).transpose(1, 2)
    hidden = torch.relu(
        torch.cat([conv(chars).max(-1).values for conv in encoder.convolutions], -1)
    )
    for highway in encoder.highways:
        hidden = highway(hidden)
    return encoder.projection(hidden)


def test_truncated_convolutions_are_exact_and_long_words_work():
    encoder = make_encoder()
    short = batch_to_ids([["a", "ab", "naïve", "word"]])[0]  # cut to 7 + 6 positions of 50
    long = batch_to_ids([["a", "x" * 60]])[0]  # 60 chars: clipped to 50 with the marks, no cut
    with torch.no_grad():
        for words in (short, long):
            expected = full_length_reference(encoder, words)
            assert_float32_close(encoder.encode_words(words), expected, NETWORK)


def test_blocks_of_words_are_each_cut_to_their_longest_word_and_stay_exact(monkeypatch):
    """Words of mixed lengths in blocks of 3, in order of length: each block's convolutions see
    its own longest word's characters plus 6 (or all 50 for a block with a 60-char word), and
    every vector (and the gradient of the weights) equals the full-length reference."""
    monkeypatch.setattr(char_cnn, "WORD_BLOCK", 3)
    encoder = make_encoder()
    tokens = ["x" * 60, "a", "abcdefgh", "ab", "abcd", "naïve", "abcdefghijkl", "abc", "z" * 20]
    words = batch_to_ids([tokens])[0]
    widths = []
    encoder.convolutions[0].register_forward_hook(
        lambda module, inputs, output: widths.append(inputs[0].shape[-1])
    )
    with torch.no_grad():
        expected = full_length_reference(encoder, words)
        widths.clear()
        assert_float32_close(encoder.encode_words(words), expected, NETWORK)
    # with the word marks, by length: a, ab, abc (5) | abcd, naïve (6 bytes), abcdefgh (10) |
    # abcdefghijkl, z * 20, x * 60 (clipped to 50); the first call is the all-padding window's
    # (width 1, this convolution's)
    assert widths == [1, 5 + 6, 10 + 6, 50]
    loss = encoder.encode_words(words).square().sum()
    reference = full_length_reference(encoder, words).square().sum()
    grads = torch.autograd.grad(loss, list(encoder.parameters()))
    reference_grads = torch.autograd.grad(reference, list(encoder.parameters()))
    for grad, reference_grad in zip(grads, reference_grads):
        assert_float32_close(grad, reference_grad, NETWORK)


def test_word_cache_gives_the_same_vectors_and_follows_weight_changes():
    encoder = make_encoder()
    plain = make_encoder(word_cache_size=0)
    ids = batch_to_ids([["the", "cat", "the", "end"], ["cat", "."]])
    mask = (ids > 0).any(-1)
    with torch.no_grad():
        first = encoder(ids, mask)
        assert len(encoder._word_cache) == 4
        torch.testing.assert_close(encoder(ids, mask), first, atol=0, rtol=0)
        assert_float32_close(plain(ids, mask), first, NETWORK)
        encoder.clear_word_cache()
        assert encoder._word_cache == {}
        assert_float32_close(encoder(ids, mask), first, NETWORK)
        assert len(encoder._word_cache) == 4  # refilled on the next pass
        encoder.projection.bias.add_(1.0)  # any in-place weight change empties the cache
        assert_float32_close(encoder(ids, mask)[mask], first[mask] + 1.0, NETWORK)
    encoder.train()
    encoder(ids, mask).sum().backward()  # training never uses the cache
    assert encoder.projection.weight.grad is not None


def test_distinct_words_index_reproduces_every_token():
    encoder = make_encoder().eval()
    char_ids = batch_to_ids([["the", "cat", "the"], ["cat", "sat"]])
    mask = (char_ids > 0).any(-1)
    with torch.no_grad():
        vectors, index = encoder.distinct_words(char_ids, mask)
        tokens = encoder(char_ids, mask)
    assert vectors.shape[0] == 3  # "the", "cat", "sat"
    assert index[0, 0] == index[0, 2] != index[0, 1]
    assert index[0, 1] == index[1, 0]
    torch.testing.assert_close(vectors[index][mask], tokens[mask], atol=0, rtol=0)
    assert tokens[1, 2].abs().sum() == 0


def test_word_cache_is_keyed_by_autocast_and_holds_copies():
    encoder = make_encoder().eval()
    words = torch.randint(1, 200, (6, 50))
    with torch.no_grad():
        exact = encoder.encode_words(words)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = encoder._encode_with_cache(words)  # fills the cache in bf16
        assert (low.float() - exact).abs().max() > 1e-4  # bf16 really differs
        served = encoder._encode_with_cache(
            words
        )  # float32 again: recomputed, not the bf16 entries
    assert_float32_close(served, exact, NETWORK)
    entry = next(iter(encoder._word_cache.values()))
    assert (
        entry.untyped_storage().nbytes() == entry.numel() * entry.element_size()
    )  # not a view of the batch


def test_the_word_cache_round_trips_through_a_checkpoint_and_never_saves_stale_entries(tmp_path):
    """`cache_state` / `load_cache_state` (what `--recover` carries): a fresh encoder with the same
    weights serves the saved bits; entries the weights no longer give are not saved."""
    from elmo_bilm import batch_to_ids, load_bilm_tf
    from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

    first, second = (load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval() for _ in range(2))
    ids = batch_to_ids([["a", "cat", "sat", "on", "the", "mat"]])
    with torch.no_grad():
        first(ids)  # fills the cache
        state = first.char_cnn.cache_state()
        torch.save(state, tmp_path / "state.th")
        second.char_cnn.load_cache_state(torch.load(tmp_path / "state.th"))  # weights_only
        assert second.char_cnn._word_cache.keys() == first.char_cnn._word_cache.keys()
        assert all(
            torch.equal(second.char_cnn._word_cache[k], v)
            for k, v in first.char_cnn._word_cache.items()
        )
        assert torch.equal(second(ids)["activations"][2], first(ids)["activations"][2])
        first.char_cnn.projection.weight.add_(1.0)  # as an optimizer step: the entries are stale
        assert first.char_cnn.cache_state() == {}


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
def test_highways_and_projection_run_on_packed_weights_from_enough_words(monkeypatch):
    """float32 inference on at least `MIN_LINEAR_ROWS` words: the highway and projection layers'
    products on oneDNN's packs, equal to the layers' own; fewer words, a gradient or another
    precision's layers keep `nn.Linear`. The packs are not copied or pickled, and a move drops
    them."""
    monkeypatch.setattr(onednn, "MIN_LINEAR_ROWS", 5)
    encoder = make_encoder()
    words = batch_to_ids([["a", "ab", "abc", "naïve", "word", "x"]])[0]
    with torch.no_grad():
        expected = full_length_reference(encoder, words)
        assert_float32_close(encoder.encode_words(words[:4]), expected[:4], NETWORK)
        assert encoder._packed is not None and not encoder._packed.items  # 4 words: too few
        assert_float32_close(encoder.encode_words(words), expected, NETWORK)
    keys = {(name, index) for name, index, _ in encoder._packed.items}
    assert keys == {("carry", 0), ("transform", 0), ("projection", 0)}
    encoder._packed.clear()
    assert_float32_close(encoder.encode_words(words), expected, NETWORK)  # with a gradient
    assert not encoder._packed.items
    with torch.no_grad():
        encoder.encode_words(words)
    for copied in (copy.deepcopy(encoder), pickle.loads(pickle.dumps(encoder))):
        assert copied._packed is None
        with torch.no_grad():
            assert_float32_close(copied.encode_words(words), expected, NETWORK)
    encoder.to(torch.float64)
    assert not encoder._packed.items
