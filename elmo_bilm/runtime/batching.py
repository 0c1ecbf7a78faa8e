"""How items become batches: the length sort of the stateless runs (`length_batches`,
`sorted_batching`) and the stateful originals' input order (`input_order_batches`,
`input_order_batching`); `elmo_bilm.runtime.engine` runs the batches they make."""

import itertools
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, TypeVar

from elmo_bilm.utils.checks import whole_number

# Sentences per bulk batch (`elmo-embed`, corpus workers; `elmo.DEFAULT_BATCH_SIZE` is AllenNLP's
# `ElmoEmbedder` default): length-sorted, a batch pads little, and more rows per recurrent step
# spread the step's weight traffic (docs/performance.md).
BULK_BATCH_SIZE = 128
# Padded tokens (rows x longest) per biLM batch: a batch's memory grows with them (every layer's
# outputs and the first layer's per-word input products are held for the whole batch), so the
# budget bounds memory whatever the sentence lengths; docs/performance.md has the measured peaks.
DEFAULT_MAX_TOKENS = 4096

T = TypeVar("T")
# How items become batches: `(items, their words) -> batches`. The engine's two: `length_batches`
# (order free: a stateless biLM) and `input_order_batches` (the stateful originals' order); an
# adapter may pass its original's own (ELMoForManyLangs shuffles its length-sorted batches).
Batching = Callable[[Iterable[T], Callable[[T], Sequence[str]]], Iterable[List[T]]]


def length_batches(
    items: Iterable[T],
    words: Callable[[T], Sequence[str]],
    batch_size: int = BULK_BATCH_SIZE,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    longest_first: bool = False,
) -> Iterator[List[T]]:
    """`items` sorted by the length of their `words` (the project's one length sort; stable:
    ties keep their order; `longest_first` the longest first, as ELMoForManyLangs sorts), in
    batches of at most `batch_size` items and `max_tokens` padded tokens (rows x (the longest +
    the two boundaries)); an item longer than the budget makes a batch of its own.
    `max_tokens=None`: no token budget."""
    whole_number(batch_size, "batch_size")
    whole_number(max_tokens, "max_tokens", optional=True)
    batch: List[T] = []
    longest = 0
    for item in sorted(items, key=lambda item: len(words(item)), reverse=longest_first):
        length = len(words(item))
        padded = (len(batch) + 1) * (max(longest, length) + 2)
        if batch and (len(batch) == batch_size or (max_tokens is not None and padded > max_tokens)):
            yield batch
            batch, longest = [], 0
        batch.append(item)
        longest = max(longest, length)
    if batch:
        yield batch


def input_order_batches(
    items: Iterable[T],
    words: Callable[[T], Sequence[str]],
    batch_size: Optional[int] = None,
    max_tokens: Optional[int] = None,
) -> Iterator[List[T]]:
    """`items` in input order, cut where the stateful originals cut them (their vectors depend
    on the batches): consecutive items, at most `batch_size` a batch (AllenNLP 0.9's and
    simple_elmo's rule) and, with `max_tokens`, while a batch's tokens (without padding, as
    bio_embeddings counts residues) stay below it, an item of more than `max_tokens` alone
    (after the batch pending). Neither: one batch of everything. Lazy: `items` may be a
    stream."""
    whole_number(batch_size, "batch_size", optional=True)
    whole_number(max_tokens, "max_tokens", optional=True)
    batch: List[T] = []
    tokens = 0
    for item in items:
        length = len(words(item))
        if max_tokens is not None and length > max_tokens:
            if batch:
                yield batch
                batch, tokens = [], 0
            yield [item]
            continue
        full = batch_size is not None and len(batch) == batch_size
        if batch and (full or (max_tokens is not None and tokens + length >= max_tokens)):
            yield batch
            batch, tokens = [], 0
        batch.append(item)
        tokens += length
    if batch:
        yield batch


def sorted_batching(
    batch_size: int = BULK_BATCH_SIZE,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    chunk_size: Optional[int] = None,
) -> Batching:
    """The stateless `Batching`: `chunk_size` items at a time (default `16 * batch_size`, so
    that a stream is read in bounded pieces) in `length_batches`."""
    whole_number(batch_size, "batch_size")
    whole_number(max_tokens, "max_tokens", optional=True)
    size = whole_number(chunk_size, "chunk_size", optional=True) or 16 * int(batch_size)

    def batches(items: Iterable[T], words: Callable[[T], Sequence[str]]) -> Iterator[List[T]]:
        stream = iter(items)
        while chunk := list(itertools.islice(stream, size)):
            yield from length_batches(chunk, words, batch_size, max_tokens)

    return batches


def input_order_batching(
    batch_size: Optional[int] = None, max_tokens: Optional[int] = None
) -> Batching:
    """The stateful originals' `Batching` (`input_order_batches`)."""
    whole_number(batch_size, "batch_size", optional=True)
    whole_number(max_tokens, "max_tokens", optional=True)

    def batches(items: Iterable[T], words: Callable[[T], Sequence[str]]) -> Iterator[List[T]]:
        return input_order_batches(items, words, batch_size, max_tokens)

    return batches
