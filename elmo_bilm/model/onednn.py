"""oneDNN's prepacked linear products for the biLM's LSTM stack on the CPU, behind the same step
interface as the `bmm` path of `elmo_bilm.model.lstm`: the per-direction route of large layers.

For the small-batch products of the recurrence whose weights do not fit in the CPU cache (streamed
from memory at every step) a prepacked linear can beat `bmm`; for small weights its per-call
overhead loses, hence the size threshold below (docs/performance.md, "oneDNN's packed
products"). Which library computes each product of a layer on this route, oneDNN's packs or MKL
on the parameters, is timed on the machine (`elmo_bilm.model.routes`).

The packs are `elmo_bilm.model.derived.DerivedCopies`: remade when their weights change.

The only torch entry points are `torch.ops.mkldnn._reorder_linear_weight` and
`torch.ops.mkldnn._linear_pointwise` (what `torch.compile`'s CPU backend uses): there is no
public API for prepacked linear weights.
"""

import functools
from typing import Callable, List, Sequence, Tuple

import torch
from torch import nn

from elmo_bilm.model import routes
from elmo_bilm.model.derived import DerivedCopies

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
        rows: int = INPUT_BATCH_HINT,
    ) -> List[Callable[[torch.Tensor], torch.Tensor]]:
        """One `x (N, in) -> x W + b (N, 4 dim)` per direction of `directions` for `weight`
        (2, in, 4 dim), on the route `elmo_bilm.model.routes` chose for products of `rows` rows:
        packed now on oneDNN's, MKL's `addmm` on the parameter itself (stacking the directions'
        results would copy hundreds of MB)."""
        linear = torch.ops.mkldnn._linear_pointwise
        route = routes.route("float32", weight.shape[1], weight.shape[2], rows)
        linears: List[Callable[[torch.Tensor], torch.Tensor]] = []
        for d in directions:
            if route == "mkl":
                linears.append(
                    lambda x, w=weight[d], b=bias[d, 0]: torch.addmm(b, x, w)  # type: ignore[misc]
                )
                continue
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
        proj, dim), each product on the route `elmo_bilm.model.routes` chose for `batch_size`
        rows (packed by oneDNN, or MKL on the parameters themselves)."""
        linear = torch.ops.mkldnn._linear_pointwise
        recurrent = routes.route("float32", w_h.shape[1], w_h.shape[2], batch_size)
        projection = routes.route("float32", w_p.shape[2], w_p.shape[1], batch_size)

        def direction(d: int) -> Step:
            gates: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
            project: Callable[[torch.Tensor], torch.Tensor]
            if recurrent == "mkl":
                gates = functools.partial(_addmm_into, weight=w_h[d])
            else:
                packed_h = self.pack("recurrent_weights", layer, d, w_h[d].t(), batch_size)
                gates = lambda inputs_t, h: linear.binary(h, inputs_t, packed_h, None, "add")  # noqa: E731
            if projection == "mkl":
                project = functools.partial(torch.mm, mat2=w_p[d].t())
            else:
                packed_p = self.pack("projections", layer, d, w_p[d], batch_size)  # (out, in)
                project = lambda m: linear(m, packed_p, None, "none", [], "")  # noqa: E731
            return gates, project

        return [direction(d) for d in directions]


def _addmm_into(inputs_t: torch.Tensor, h: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`inputs_t + h @ weight`: the recurrent product on MKL's route."""
    return torch.addmm(inputs_t, h, weight)
