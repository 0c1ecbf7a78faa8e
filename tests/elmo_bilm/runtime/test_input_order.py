"""The engine's input-order mode (issue 80): the stateful originals' batching
(`input_order_batches`, ELMoForManyLangs' longest-first batches run shuffled), one loop for every
adapter (`batch_pieces` over given batches, `embed_each` giving arrays back in input order), and
the carried LSTM states through the biLM's public API."""

import itertools
import random
from typing import Iterator, List, Sequence

import numpy
import pytest
import torch

from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.runtime import engine
from elmo_bilm.runtime.engine import (
    embed_each,
    input_order_batches,
    input_order_batching,
    length_batches,
    same_words,
    sorted_batching,
)
from elmo_bilm.runtime.layers import Layers
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close

CPU = torch.device("cpu")
SENTENCES = [["w"] * n for n in (3, 0, 8, 2, 30, 5, 1)]


def lengths(batches: Sequence[Sequence[Sequence[str]]]) -> List[List[int]]:
    return [[len(s) for s in batch] for batch in batches]


@pytest.fixture(scope="module")
def bilm():
    return load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()


def test_input_order_batches_keep_the_order_and_cut_where_the_originals_cut() -> None:
    # a count (AllenNLP 0.9, simple_elmo): consecutive, the last one short
    assert lengths(input_order_batches(SENTENCES, list, 3)) == [[3, 0, 8], [2, 30, 5], [1]]
    # bio_embeddings' residues: consecutive while the tokens stay below 12 (no padding); a
    # sentence of more than 12 alone, after the batch pending
    batches = lengths(input_order_batches(SENTENCES, list, None, 12))
    assert batches == [[3, 0, 8], [2], [30], [5, 1]]
    assert list(itertools.chain(*batches)) == [len(s) for s in SENTENCES]
    # neither: everything as one batch; both: whichever cuts first
    assert lengths(input_order_batches(SENTENCES, list)) == [[len(s) for s in SENTENCES]]
    assert lengths(input_order_batches(SENTENCES, list, 2, 12)) == [[3, 0], [8, 2], [30], [5, 1]]


def test_input_order_batches_read_a_stream_lazily() -> None:
    seen: List[int] = []

    def stream() -> Iterator[List[str]]:
        for n in itertools.count(1):
            seen.append(n)
            yield ["w"] * n

    first = next(input_order_batches(stream(), list, 2))
    assert lengths([first]) == [[1, 2]] and seen == [1, 2, 3]  # the third closes the batch


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, float("nan")])
def test_input_order_sizes_are_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="must be a whole number"):
        list(input_order_batches(SENTENCES, list, bad))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a whole number"):
        input_order_batching(None, bad)  # type: ignore[arg-type]


def test_the_longest_first_sort_is_stable() -> None:
    items = [("a", 2), ("b", 5), ("c", 2), ("d", 5), ("e", 1)]
    batches = list(length_batches(items, lambda i: "x" * i[1], 2, None, longest_first=True))
    assert [[name for name, _ in batch] for batch in batches] == [["b", "d"], ["a", "c"], ["e"]]
    # the token budget is the longest's, whichever end it is at
    budget = list(length_batches(items, lambda i: "x" * i[1], 9, 14, longest_first=True))
    assert all(len(b) * (max(i[1] for i in b) + 2) <= 14 for b in budget if len(b) > 1)


@pytest.mark.numerics
def test_every_batching_gives_each_sentences_vectors_back_in_input_order(bilm) -> None:
    """Stateless, batches change no vector: the sorted, in-order and shuffled batchings give
    each sentence its own vectors, in input order, each its own array."""
    alone = [next(embed_each(bilm, [s], same_words, input_order_batching(1))) for s in SENTENCES]
    rng = random.Random(80)

    def shuffled(items, words):  # type: ignore[no-untyped-def]
        batches = list(length_batches(items, words, 2, None, longest_first=True))
        rng.shuffle(batches)
        return batches

    for batching in (sorted_batching(3, 40), input_order_batching(3), shuffled):
        arrays = list(embed_each(bilm, iter(SENTENCES), same_words, batching))
        assert [a.shape[1] for a in arrays] == [len(s) for s in SENTENCES]
        for got, want in zip(arrays, alone, strict=True):
            assert got.base is None  # not a view holding its batch's array
            assert_float32_close(got, want, NETWORK)


@pytest.mark.numerics
def test_the_layers_are_kept_on_the_device_as_layers_says(bilm) -> None:
    every = list(embed_each(bilm, SENTENCES, same_words, input_order_batching(4)))
    for layers, pick in (
        (Layers("top"), lambda a: a[-1]),
        (Layers("average"), lambda a: a.mean(0)),
        (Layers(index=1), lambda a: a[1]),
        (Layers(index=-3), lambda a: a[0]),
        (Layers("concatenated"), lambda a: a.transpose(1, 0, 2).reshape(a.shape[1], 3 * 32)),
    ):
        kept = list(embed_each(bilm, SENTENCES, same_words, input_order_batching(4), layers=layers))
        for got, full in zip(kept, every, strict=True):
            assert_float32_close(got, pick(full), NETWORK)


def test_padded_gives_each_row_to_its_batchs_longest(bilm) -> None:
    arrays = list(embed_each(bilm, SENTENCES, same_words, input_order_batching(3), padded=True))
    assert [a.shape[1] for a in arrays] == [8, 8, 8, 30, 30, 30, 1]


def test_a_lone_empty_batch_is_skipped_only_when_asked(bilm, monkeypatch) -> None:
    runs: List[int] = []
    real = engine.batch_layers
    monkeypatch.setattr(
        engine, "batch_layers", lambda b, s, *a: runs.append(len(s)) or real(b, s, *a)
    )
    kept = list(embed_each(bilm, [[], ["a"], []], same_words, input_order_batching(1)))
    assert runs == [1, 1, 1] and [a.shape for a in kept] == [(3, 0, 32), (3, 1, 32), (3, 0, 32)]
    runs.clear()
    batching = input_order_batching(1)
    kept = list(embed_each(bilm, [[], ["a"]], same_words, batching, skip_lone_empty=True))
    assert runs == [1] and [a.shape for a in kept] == [(3, 0, 32), (3, 1, 32)]
    top = list(embed_each(bilm, [[]], same_words, batching, layers="top", skip_lone_empty=True))
    assert top[0].shape == (0, 32) and top[0].dtype == numpy.float32


@pytest.mark.numerics
def test_stateful_input_order_batches_carry_each_rows_states(bilm) -> None:
    """Row i of a batch starts from where row i of the batch before ended: the second batch's
    vectors differ from a fresh start, and equal the same batches run one by one; the states
    are read and set through the biLM (`states`), and reset by `set_stateful`."""
    bilm.set_stateful(True)
    try:
        carried = list(embed_each(bilm, SENTENCES[:6], same_words, input_order_batching(3)))
        after = bilm.states
        assert len(after) == 2 and after[0].shape[1] == 3  # (h, c), three rows
        bilm.reset_states()
        assert bilm.states == ()
        first = list(embed_each(bilm, SENTENCES[:3], same_words, input_order_batching(3)))
        saved = bilm.states
        second = list(embed_each(bilm, SENTENCES[3:6], same_words, input_order_batching(3)))
        for got, want in zip(first + second, carried, strict=True):
            assert_float32_close(got, want, NETWORK)
        bilm.states = saved  # the states after the first batch, set back
        again = list(embed_each(bilm, SENTENCES[3:6], same_words, input_order_batching(3)))
        for got, want in zip(again, second, strict=True):
            assert_float32_close(got, want, NETWORK)
        bilm.set_stateful(True)  # a fresh start
        fresh = list(embed_each(bilm, SENTENCES[3:6], same_words, input_order_batching(3)))
        assert max(float(abs(a - b).max()) for a, b in zip(fresh, second) if a.size) > 1e-3
    finally:
        bilm.set_stateful(False)
    with pytest.raises(ValueError, match="stateless"):
        bilm.states = saved


@pytest.mark.parametrize("device", ["cpu", -1, numpy.int64(-1), torch.device("cpu")])
def test_embed_each_reads_a_device_as_the_entry_points_do(bilm, device) -> None:
    # a device given as "cpu" or -1 failed deep in batch_layers (`'str' object has no
    # attribute 'type'`)
    expected = list(embed_each(bilm, SENTENCES[:3], same_words, input_order_batching(2), CPU))
    got = list(embed_each(bilm, SENTENCES[:3], same_words, input_order_batching(2), device))
    for a, b in zip(got, expected, strict=True):
        assert numpy.array_equal(a, b)


@pytest.mark.parametrize("max_tokens", [0, -1, 2.5, float("nan"), "8", True])
def test_embed_each_refuses_a_token_budget_it_cannot_read_before_any_work(bilm, max_tokens):
    # NaN ran a long sentence whole (n + 2 > nan is false), 2.5 failed deep in the pieces
    with pytest.raises(ValueError, match="max_tokens must be a whole number"):
        next(
            embed_each(
                bilm, [["w"] * 40], same_words, input_order_batching(2), CPU, "all", max_tokens
            )
        )


@pytest.mark.parametrize("chunk_size", [-1, 1.5, 0, "4"])
def test_sorted_batching_refuses_a_chunk_size_it_cannot_read(chunk_size) -> None:
    # -1 and 1.5 failed in itertools.islice, 0 read as the default
    with pytest.raises(ValueError, match="chunk_size must be a whole number"):
        sorted_batching(2, 40, chunk_size)


@pytest.mark.parametrize("max_tokens", [0, float("nan")])
def test_sorted_batching_refuses_a_bad_budget_when_made(max_tokens) -> None:
    with pytest.raises(ValueError, match="max_tokens must be a whole number"):
        sorted_batching(2, max_tokens)


def test_a_sentence_put_together_from_pieces_is_not_copied_again(bilm) -> None:
    """The array of a sentence longer than the budget is handed over as assembled: it and one
    piece on the host at a time, not a second copy of it (issue 81's bound for the APIs that
    return whole arrays). Numpy's allocations are traced; torch's are not."""
    import tracemalloc

    sentence = ["word"] * 600
    nbytes = 3 * 600 * 32 * 4
    batching = input_order_batching(1)
    list(embed_each(bilm, [sentence[:10]], same_words, batching, max_tokens=50))  # warm
    tracemalloc.start()
    try:
        (array,) = embed_each(bilm, [sentence], same_words, batching, max_tokens=50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert array.shape == (3, 600, 32)
    assert array.base is None or array.base.nbytes == nbytes  # no batch held alive
    assert peak < 1.5 * nbytes, (peak, nbytes)
