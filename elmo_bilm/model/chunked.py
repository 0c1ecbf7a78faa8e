"""One sequence longer than the token budget, run exactly in pieces: memory set by the budget,
not by the sequence (a book chapter, a titin, a line of a million tokens).

A biLSTM can be cut without changing its result. The character CNN and the highways see one
word at a time, so each piece's token vectors are the uncut run's. The forward stack runs the
pieces left to right and the backward stack right to left, each layer of each direction carrying
its `(h, c)` from one piece into the next, so every step sees the states it sees uncut: the
sentence boundaries stay where they are (`<S>` opens the first piece, `</S>` closes the last) and
the backward direction starts at the true end, from the states the stateful mode carries, if
any. What differs from the uncut run is only how the products are blocked (float32 rounding), and
for the int8 products, whose inputs are quantized with a scale per product, the scales of the
input-to-gate products (computed per piece: int8's own error, not a change of meaning).

A piece is emitted once both directions have run over it, in order from the start: a first pass
runs the backward stack from the end to the start and keeps only its states at each piece's right
edge (a few KB a piece); the second pass runs the forward stack from the start, and with each
piece the backward stack again from the state kept at its right edge. The backward stack runs
twice (1.5 times the LSTM work of the uncut run) so that every piece leaves whole, in order, and
is dropped: the sinks write it (HDF5 by slices, Parquet by rows) and no output grows in memory.
"""

import functools
from typing import Iterator, List, Optional, Sequence, Tuple

import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.lstm import run_direction_alone, run_directions

# each layer's (h, c) of one direction
_States = Optional[List[Tuple[torch.Tensor, torch.Tensor]]]


def needs_chunks(n_tokens: int, max_tokens: Optional[int]) -> bool:
    """Whether a sequence of `n_tokens` (its two boundaries come on top) exceeds the budget."""
    return max_tokens is not None and n_tokens + 2 > max_tokens


def piece_bounds(n_tokens: int, max_tokens: int) -> List[Tuple[int, int]]:
    """The pieces `[start, end)` of the `n_tokens + 2` positions (`<S>`, the tokens, `</S>`),
    at most `max_tokens` each."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    length = n_tokens + 2
    return [(a, min(a + max_tokens, length)) for a in range(0, length, max_tokens)]


def _piece_tokens(
    bilm: BiLm, words: Sequence[str], start: int, end: int, device: torch.device
) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Positions `start:end` of the sequence with its boundaries: their token vectors `(n,
    proj)` and `(distinct word vectors (U, proj), index (n,))` (`CharCnnEncoder.distinct_words`),
    the biLM's own ids and boundary markers (`batch_to_ids`, `add_boundaries`)."""
    length = len(words) + 2
    ids = bilm.batch_to_ids([list(words[max(start, 1) - 1 : min(end, length - 1) - 1])])
    ids, _ = bilm.add_boundaries(ids, torch.ones(ids.shape[:2], dtype=torch.bool))
    first = 0 if start == 0 else 1  # `<S>` is position 0 only
    ids = ids[:, first : first + end - start].to(device)
    mask = torch.ones(ids.shape[:2], dtype=torch.bool, device=device)
    vectors, index = bilm.char_cnn.distinct_words(ids, mask)
    return bilm.char_cnn.tokens(vectors, index, mask)[0], (vectors, index[0])


def _backward(
    bilm: BiLm, tokens: torch.Tensor, distinct: Tuple[torch.Tensor, torch.Tensor], starts: _States
) -> Tuple[List[torch.Tensor], List[Tuple[torch.Tensor, torch.Tensor]]]:
    """The backward stack over one piece, from its right edge: each layer's outputs in
    position order and its states at the piece's left edge."""
    vectors, index = distinct
    outputs, lasts = bilm.lstm.run_direction(1, tokens.flip(0), (vectors, index.flip(0)), starts)
    return [out.flip(0) for out in outputs], lasts


def _joined(
    tokens: torch.Tensor,
    forward_out: List[torch.Tensor],
    backward_out: List[torch.Tensor],
    first: int,
    last: int,
) -> Optional[torch.Tensor]:
    """Positions `first:last` of one piece's layers `(n_layers, last - first, 2 * proj)`, as
    `BiLm.forward`'s `activations` (the token layer doubled, each LSTM layer `[forward;
    backward]`), written into one contiguous tensor: no per-layer copies beside it; None when
    the range is empty (a piece of a boundary alone)."""
    if last <= first:
        return None
    proj = tokens.shape[-1]
    dtype = functools.reduce(
        torch.promote_types, [t.dtype for t in forward_out + backward_out], tokens.dtype
    )
    layers = tokens.new_empty((1 + len(forward_out), last - first, 2 * proj), dtype=dtype)
    layers[0, :, :proj] = layers[0, :, proj:] = tokens[first:last]
    for i, (f, b) in enumerate(zip(forward_out, backward_out), start=1):
        layers[i, :, :proj], layers[i, :, proj:] = f[first:last], b[first:last]
    return layers


def chunked_layers(
    bilm: BiLm, words: Sequence[str], max_tokens: int
) -> Iterator[Tuple[int, torch.Tensor]]:
    """Every layer of one tokenised sentence, run in pieces of at most `max_tokens` positions
    (see the module's docstring), piece after piece from the start: `(first token's index,
    layers (n_layers, n, 2 * proj))` on the biLM's device, boundaries left out (a piece holding
    only a boundary yields nothing), the layers as `BiLm.forward`'s `activations` of the uncut
    sentence. Run it frozen (`elmo_bilm.model.bilm.frozen`). Stateful (`lstm.stateful`): the
    piece runs start from row 0's carried states and leave it the uncut run's final states, once
    the last piece is out."""
    lstm = bilm.lstm
    device = next(bilm.parameters()).device
    n_tokens = len(words)
    bounds = piece_bounds(n_tokens, max_tokens)
    carried = lstm.row_states(device)
    # first pass: the backward stack from the true end, keeping its states at each right edge
    right_edges: List[_States] = [None] * len(bounds)
    backward: _States = None if carried is None else carried[1]
    for k in reversed(range(len(bounds))):
        right_edges[k] = backward
        tokens, distinct = _piece_tokens(bilm, words, *bounds[k], device)
        # in the thread the backward stack runs in below: one allocator arena for both passes
        task = functools.partial(_backward, bilm, tokens, distinct, backward)
        _, backward = run_direction_alone(1, task, tokens)
    forward: _States = None if carried is None else carried[0]
    for k, (start, end) in enumerate(bounds):
        tokens, distinct = _piece_tokens(bilm, words, start, end, device)
        (forward_out, forward), (backward_out, _) = run_directions(
            [
                functools.partial(lstm.run_direction, 0, tokens, distinct, forward),
                functools.partial(_backward, bilm, tokens, distinct, right_edges[k]),
            ],
            tokens,
        )
        right_edges[k] = None  # kept states are dropped as the pieces go
        first, last = max(start, 1), min(end, n_tokens + 1)  # without `<S>` and `</S>`
        layers = _joined(tokens, forward_out, backward_out, first - start, last - start)
        # only the layers stay alive while the caller writes them
        del tokens, distinct, forward_out, backward_out
        if layers is not None:
            yield first - 1, layers
    assert forward is not None and backward is not None
    lstm.keep_row_states(forward, backward)
