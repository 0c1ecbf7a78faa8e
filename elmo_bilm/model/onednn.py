"""oneDNN's prepacked linear products for the biLM's LSTM stack on the CPU, behind the same step
interface as the `bmm` path of `elmo_bilm.model.lstm`.

For the small-batch products of the recurrence whose weights do not fit in the CPU cache (streamed
from memory at every step) oneDNN's prepacked linear is faster than `bmm`; for small weights its
per-call overhead loses, hence the size threshold below. The input-to-gate products cover every
position of a batch at once (hundreds of rows), where oneDNN is faster at every size measured.
The measurements behind the threshold are in docs/performance.md ("oneDNN's packed products").

Copies derived from weights, these packs and the other precisions' (`elmo_bilm.runtime.precision`),
live in a `DerivedCopies`: it compares fingerprints of their weights (`WeightStamp`) at every pass,
or at the first pass of a `fixed_weights` run.

The only torch entry points are `torch.ops.mkldnn._reorder_linear_weight` and
`torch.ops.mkldnn._linear_pointwise` (what `torch.compile`'s CPU backend uses): there is no
public API for prepacked linear weights.
"""

import contextlib
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional, Sequence, Tuple

import torch
from torch import nn

AVAILABLE = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
# per-step weights (recurrent + projection, both directions) from which the packed products win
MIN_STEP_BYTES = 32 * 2**20
INPUT_BATCH_HINT = 1024
# rows from which a layer's packed product (`PackedWeights.linear`) wins against `nn.Linear`,
# its weights' check included (docs/performance.md, "The char CNN's highways on packed weights")
MIN_LINEAR_ROWS = 32

# (gate_inputs_t, h) -> gates and m -> P m, for one direction or both stacked
Step = Tuple[
    Callable[[torch.Tensor, torch.Tensor], torch.Tensor], Callable[[torch.Tensor], torch.Tensor]
]


def applies(step_bytes: int, inputs: torch.Tensor, needs_grad: bool) -> bool:
    """Whether a layer runs on packed products: float32 on a CPU, no gradient needed, and per-step
    weights too large for the cache."""
    on_cpu = inputs.device.type == "cpu" and inputs.dtype == torch.float32
    return AVAILABLE and on_cpu and not needs_grad and step_bytes >= MIN_STEP_BYTES


def linear_applies(layer: nn.Module, x: torch.Tensor) -> bool:
    """Whether `PackedWeights.linear` packs `layer`: a plain float32 `nn.Linear` (not another
    precision's module) on a CPU, no gradient needed, at least `MIN_LINEAR_ROWS` rows, and not
    while a graph is traced (an export: the packs are opaque tensors, which no graph holds)."""
    tracing = torch.jit.is_tracing() or torch.compiler.is_compiling()
    if tracing or not (AVAILABLE and type(layer) is nn.Linear):
        return False
    weight = layer.weight
    needs_grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
    on_cpu = x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32
    return on_cpu and not needs_grad and x.dim() == 2 and x.shape[0] >= MIN_LINEAR_ROWS


# 64-bit words per row of a weight's fingerprint (`fingerprint`)
_ROW_WORDS = 1024
_multipliers: Dict[torch.device, torch.Tensor] = {}


def _row_multipliers(device: torch.device) -> torch.Tensor:
    """`_ROW_WORDS` fixed pseudo-random odd 64-bit multipliers (the same in every process)."""
    if device not in _multipliers:
        generator = torch.Generator().manual_seed(67)
        half = torch.randint(-(2**62), 2**62, (_ROW_WORDS,), generator=generator)
        _multipliers[device] = (half * 2 + 1).to(device)  # every odd int64 can come out
    return _multipliers[device]


def _hash_rows(words: torch.Tensor) -> torch.Tensor:
    """`sum_j words[r, j] * c_j` modulo 2^64 for each row `r` of the int64 `words` (rows, <=
    `_ROW_WORDS`): exact integer arithmetic, wrapping, so the order of the sum is irrelevant."""
    multipliers = _row_multipliers(words.device)[: words.shape[1]]
    if words.device.type == "cpu":
        return words @ multipliers  # one pass at memory speed (no integer matmul elsewhere)
    return torch.cat([(block * multipliers).sum(1) for block in words.split(4096)])


def fingerprint(tensor: torch.Tensor) -> torch.Tensor:
    """A hash of `tensor`'s values, one pass over its memory (int64 `(rows,)`).

    The bytes, in memory order, read as 64-bit words and cut into rows of `_ROW_WORDS`; each row
    hashes to `sum_j w_j c_j mod 2^64` with fixed random odd `c_j`. A change to one element, or
    to elements in different rows, always changes it (an odd multiplier is invertible modulo
    2^64); several changes within one row go unnoticed only when their terms cancel modulo 2^64:
    a chance of 2^-64 for changes unrelated to the `c_j`, but certain for the sign bits of exactly
    two odd-numbered float32 elements of a row (their top bits count modulo 2 only). What
    `WeightStamp` compares: unlike autograd's version counter it sees edits through `.data`."""
    with torch.no_grad():
        if not tensor.is_contiguous():  # a transposed view: its memory in order, no copy
            order = sorted(range(tensor.dim()), key=lambda i: tensor.stride()[i], reverse=True)
            permuted = tensor.permute(order)
            tensor = permuted if permuted.is_contiguous() else tensor.contiguous()
        data = tensor.detach().reshape(-1).view(torch.uint8)
        head = min(-data.storage_offset() % 8, data.numel())  # bytes before an aligned word
        n_words = (data.numel() - head) // 8
        words = data[head : head + 8 * n_words].view(torch.int64)
        full = n_words // _ROW_WORDS * _ROW_WORDS
        parts = [_hash_rows(words[:full].view(-1, _ROW_WORDS))] if full else []
        if n_words > full:
            parts.append(_hash_rows(words[full:].view(1, -1)))
        loose = torch.cat([data[:head], data[head + 8 * n_words :]])  # at most 14 bytes
        if loose.numel():
            parts.append(_hash_rows(loose.to(torch.int64).view(1, -1)))
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


# a parameter's storage address -> the `fixed_weights` run that holds it
_FIXED: Dict[int, object] = {}


@contextlib.contextmanager
def fixed_weights(module: nn.Module) -> Iterator[None]:
    """A run over which `module`'s weights do not change (a bulk embedding, `embed_file`): the
    copies derived from them (`DerivedCopies`, the char CNN's word cache) are checked against
    the weights at their first use in the run, not at every pass. The caller promises that the
    weights stay as they are until the run ends; a change made inside it is seen at the first
    pass after it. Other modules' weights are checked as ever; in a nested run, the outer one
    holds the weights it holds already."""
    run = object()
    addresses = {p.untyped_storage().data_ptr() for p in module.parameters()}
    addresses -= {0, *_FIXED}
    for address in addresses:
        _FIXED[address] = run
    try:
        yield
    finally:
        for address in addresses:
            del _FIXED[address]


def fixed_run(tensors: Sequence[torch.Tensor]) -> Optional[object]:
    """The `fixed_weights` run that holds every one of `tensors` (views of its parameters
    count), if one does."""
    runs = {_FIXED.get(t.untyped_storage().data_ptr()) for t in tensors}
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
        return {"items": {}}  # not empty: pickle calls `__setstate__` for a true state only

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def __deepcopy__(self, memo: Dict[int, Any]) -> "DerivedCopies":
        return type(self)()


class PackedWeights(DerivedCopies):
    """oneDNN-packed per-direction copies of parameters, keyed by (name, layer, direction); each
    direction's on its own, so the two directions' threads check and pack their own."""

    def pack(
        self, name: str, layer: int, direction: int, weight: torch.Tensor, batch_hint: int
    ) -> torch.Tensor:
        """The pack of one direction's `weight` (out, in) (a view of the parameter
        `name`[`layer`][`direction`] is fine)."""
        return self.get(
            (name, layer, direction),
            [weight],
            lambda: torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), batch_hint),
        )

    def linear(self, name: str, layer: nn.Linear, x: torch.Tensor, index: int = 0) -> torch.Tensor:
        """`layer(x)` on `layer`'s packed weights where that is faster (`linear_applies`), keyed
        by `name` and `index`; else `layer(x)` itself."""
        if not linear_applies(layer, x):
            return layer(x)
        pack = self.pack(name, index, 0, layer.weight, INPUT_BATCH_HINT)
        return torch.ops.mkldnn._linear_pointwise(x, pack, layer.bias, "none", [], "")

    def input_linears(
        self,
        layer: int,
        weight: torch.Tensor,
        bias: torch.Tensor,
        directions: Sequence[int] = (0, 1),
    ) -> List[Callable[[torch.Tensor], torch.Tensor]]:
        """One `x (N, in) -> x W + b (N, 4 dim)` per direction of `directions` for `weight`
        (2, in, 4 dim), packed now (stacking the directions' results would copy hundreds of
        MB)."""
        linear = torch.ops.mkldnn._linear_pointwise
        linears: List[Callable[[torch.Tensor], torch.Tensor]] = []
        for d in directions:
            pack = self.pack("input_weights", layer, d, weight[d].t(), INPUT_BATCH_HINT)
            linears.append(
                lambda x, pack=pack, b=bias[d, 0]: linear(x, pack, b, "none", [], "")  # type: ignore[misc]
            )
        return linears

    def step_products(
        self,
        layer: int,
        w_h: torch.Tensor,
        w_p: torch.Tensor,
        batch_size: int,
        directions: Sequence[int] = (0, 1),
    ) -> List[Step]:
        """One `(gate_inputs_t, h) -> gates`, `m -> P m` pair per direction of `directions`,
        for the recurrent weights `w_h` (2, proj, 4 dim) and the projection `w_p` stored (2,
        proj, dim)."""
        linear = torch.ops.mkldnn._linear_pointwise

        def direction(d: int) -> Step:
            packed_h = self.pack("recurrent_weights", layer, d, w_h[d].t(), batch_size)
            packed_p = self.pack("projections", layer, d, w_p[d], batch_size)  # (out, in)
            return (
                lambda inputs_t, h: linear.binary(h, inputs_t, packed_h, None, "add"),
                lambda m: linear(m, packed_p, None, "none", [], ""),
            )

        return [direction(d) for d in directions]
