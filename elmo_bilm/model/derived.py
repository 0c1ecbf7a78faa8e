"""Copies derived from a module's weights (oneDNN's float32 packs, the other precisions' casts
and packs) kept in step with the weights, whichever way they change: `.data` edits included,
which autograd's version counters miss. `DerivedCopies` compares fingerprints of the weights
(`WeightStamp`) at every pass, or at the first pass of a `fixed_weights` run (a bulk embedding
that owns its biLM, in the thread that runs it).
"""

import contextlib
import itertools
import threading
from typing import Any, Callable, Dict, Hashable, Iterator, Optional, Sequence, Tuple

import torch
from torch import nn

from elmo_bilm.model import fused_cell

# 32-bit words per row of a weight's fingerprint (`fingerprint`)
_ROW_WORDS = 1024
# rows widened to 64 bits at a time (2 MiB of int64): the extra memory a fingerprint takes
_BLOCK_ROWS = 256
_multipliers: Dict[torch.device, torch.Tensor] = {}


def _row_multipliers(device: torch.device) -> torch.Tensor:
    """`_ROW_WORDS` fixed pseudo-random odd 64-bit multipliers (the same in every process)."""
    if device not in _multipliers:
        generator = torch.Generator().manual_seed(67)
        half = torch.randint(-(2**62), 2**62, (_ROW_WORDS,), generator=generator)
        _multipliers[device] = (half * 2 + 1).to(device)  # every odd int64 can come out
    return _multipliers[device]


def _hash_rows(words: torch.Tensor) -> torch.Tensor:
    """`sum_j words[r, j] * c_j` modulo 2^64 for each row `r` of `words` (rows, <= `_ROW_WORDS`;
    int32 words, sign-extended, or bytes), widened to int64 a block of rows at a time into one
    buffer (fresh memory for the whole tensor would cost more than the products): exact integer
    arithmetic, wrapping, so the order of the sum is irrelevant. The compiled loop built with the
    package (`fused_cell.row_hashes`) computes the same integers in one pass over the words,
    several times faster than widening and `torch.mv`; where it was not built, torch does."""
    multipliers = _row_multipliers(words.device)[: words.shape[1]]
    compiled = fused_cell.row_hashes(words, multipliers)  # the same integers, one pass
    if compiled is not None:
        return compiled
    rows = words.shape[0]
    hashes = torch.empty(rows, dtype=torch.int64, device=words.device)
    buffer = torch.empty(
        (min(rows, _BLOCK_ROWS), words.shape[1]), dtype=torch.int64, device=words.device
    )
    for start in range(0, rows, _BLOCK_ROWS):
        block = words[start : start + _BLOCK_ROWS]
        wide = buffer[: block.shape[0]]
        wide.copy_(block)
        if wide.device.type == "cpu":  # no integer matmul elsewhere
            torch.mv(wide, multipliers, out=hashes[start : start + block.shape[0]])
        else:
            hashes[start : start + block.shape[0]] = (wide * multipliers).sum(1)
    return hashes


def fingerprint(tensor: torch.Tensor) -> torch.Tensor:
    """A hash of `tensor`'s values, one pass over its memory (int64 `(rows,)`).

    The bytes, in memory order, read as 32-bit words and cut into rows of `_ROW_WORDS`; each row
    hashes to `sum_j w_j c_j mod 2^64` with fixed random odd 64-bit `c_j` and each word `w_j`
    taken as a 64-bit integer. A change to one word, or to words in different rows, always
    changes it: the word changes by less than 2^32 and an odd multiplier is invertible modulo
    2^64. Changes to several words of a row go unnoticed only when their terms cancel modulo
    2^64, which for any bit of a word, the sign bits of floats included, takes a cancellation
    of the `c_j` modulo at least 2^33: a chance of about 2^-32 for changes unrelated to them.
    (With 64-bit words, negating two odd-numbered float32 elements of a row, columns 1 and 3,
    say, cancelled always: a word's top bit counts modulo 2 only; project issue 79.) What
    `WeightStamp` compares: unlike autograd's version counter it sees edits through `.data`."""
    with torch.no_grad():
        if not tensor.is_contiguous():  # a transposed view: its memory in order, no copy
            order = sorted(range(tensor.dim()), key=lambda i: tensor.stride()[i], reverse=True)
            permuted = tensor.permute(order)
            tensor = permuted if permuted.is_contiguous() else tensor.contiguous()
        data = tensor.detach().reshape(-1).view(torch.uint8)
        head = min(-data.storage_offset() % 4, data.numel())  # bytes before an aligned word
        n_words = (data.numel() - head) // 4
        # no whole word (a short tensor off a word boundary): an empty slice there cannot be
        # viewed as words either
        words = (
            data[head : head + 4 * n_words].view(torch.int32)
            if n_words
            else data.new_zeros(0, dtype=torch.int32)
        )
        full = n_words // _ROW_WORDS * _ROW_WORDS
        parts = [_hash_rows(words[:full].view(-1, _ROW_WORDS))] if full else []
        if n_words > full:
            parts.append(_hash_rows(words[full:].view(1, -1)))
        loose = torch.cat([data[:head], data[head + 4 * n_words :]])  # at most 6 bytes
        if loose.numel():
            parts.append(_hash_rows(loose.view(1, -1)))
        return torch.cat(parts) if parts else data.new_zeros(0, dtype=torch.int64)


class WeightStamp:
    """What a derived copy of tensors (a cast, a pack) was made from: their layouts and
    fingerprints. Equal stamps: the copy is still theirs, however the tensors were edited in
    between (an optimiser step, `load_state_dict`, `param.data.mul_(2)`, `param.data = t`)."""

    def __init__(self, tensors: Sequence[torch.Tensor]) -> None:
        self.layouts = [(t.device, t.dtype, t.shape, t.stride()) for t in tensors]
        self.hashes = [fingerprint(t) for t in tensors]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, WeightStamp)
            and self.layouts == other.layouts
            and all(torch.equal(a, b) for a, b in zip(self.hashes, other.hashes))
        )

    __hash__ = None  # type: ignore[assignment]


class _Runs(threading.local):
    """Per thread: a parameter's storage address -> the `fixed_weights` run that holds it."""

    def __init__(self) -> None:
        self.held: Dict[int, object] = {}


_FIXED = _Runs()


@contextlib.contextmanager
def fixed_weights(module: nn.Module) -> Iterator[None]:
    """A run over which `module`'s weights (its parameters and buffers) do not change (a bulk
    embedding, `embed_file`): the copies derived from them (`DerivedCopies`, the char CNN's
    word cache) are checked against the weights at their first use in the run, not at every
    pass. The caller promises that the weights stay as they are until the run ends; a change
    made inside it is seen at the first pass after it. The run holds for the thread that
    entered it alone: another thread running the same biLM meanwhile checks its weights at
    every pass, as ever (project issue 79), and so are other modules' weights; in a nested
    run, the outer one holds the weights it holds already."""
    run = object()
    held = _FIXED.held
    tensors = itertools.chain(module.parameters(), module.buffers())  # packs read both
    addresses = {t.untyped_storage().data_ptr() for t in tensors}
    addresses -= {0, *held}
    for address in addresses:
        held[address] = run
    try:
        yield
    finally:
        for address in addresses:
            del held[address]


def fixed_run(tensors: Sequence[torch.Tensor]) -> Optional[object]:
    """The `fixed_weights` run of this thread that holds every one of `tensors` (views of its
    parameters count), if one does."""
    held = _FIXED.held
    runs = {held.get(t.untyped_storage().data_ptr()) for t in tensors}
    return runs.pop() if len(runs) == 1 else None


class DerivedCopies:
    """Copies derived from parameters (oneDNN packs, other precisions' casts and packs), by key,
    each remade when one of its sources changes value, whichever way (`WeightStamp`: an
    optimiser step, a load, an edit through `.data`). Opaque tensors: a copy or a pickle of the
    owner starts empty and remakes them on use."""

    def __init__(self) -> None:
        self.items: Dict[Hashable, Tuple[WeightStamp, Any]] = {}
        # key -> the `fixed_weights` run in which the item was last checked
        self.checked_in: Dict[Hashable, object] = {}

    def clear(self) -> None:
        """Drop every copy; the next `get` of each key makes it again."""
        self.items.clear()
        self.checked_in.clear()

    def get(self, key: Hashable, sources: Sequence[torch.Tensor], make: Callable[[], Any]) -> Any:
        """The item `key`, made by `make` from `sources` (exactly what `make` reads: a weight's
        slice for one direction, not the whole parameter, so each is fingerprinted once a
        pass); within a `fixed_weights` run, checked at its first use only."""
        run = fixed_run(sources)
        if run is not None and key in self.items and self.checked_in.get(key) is run:
            return self.items[key][1]
        stamp = WeightStamp(sources)
        if key not in self.items or self.items[key][0] != stamp:
            with torch.no_grad():
                self.items[key] = (stamp, make())
        self.checked_in[key] = run
        return self.items[key][1]

    def __getstate__(self) -> Dict[str, Any]:
        return {"items": {}}  # not empty: pickle and copy call `__setstate__` for a true state only

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
