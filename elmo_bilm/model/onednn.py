"""oneDNN's prepacked linear products for the biLM's LSTM stack on the CPU, behind the same step
interface as the `bmm` path of `elmo_bilm.model.lstm`.

For the small-batch products of the recurrence whose weights do not fit in the CPU cache (streamed
from memory at every step) oneDNN's prepacked linear is faster than `bmm`; for small weights its
per-call overhead loses, hence the size threshold below. The input-to-gate products cover every
position of a batch at once (hundreds of rows), where oneDNN is faster at every size measured.
The measurements behind the threshold are in docs/performance.md ("oneDNN's packed products").

The only torch entry points are `torch.ops.mkldnn._reorder_linear_weight` and
`torch.ops.mkldnn._linear_pointwise` (what `torch.compile`'s CPU backend uses): there is no
public API for prepacked linear weights.
"""

from typing import Callable, Dict, List, Tuple

import torch

AVAILABLE = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
# per-step weights (recurrent + projection, both directions) from which the packed products win
MIN_STEP_BYTES = 32 * 2**20
INPUT_BATCH_HINT = 1024

# (gate_inputs_t, h) -> gates and m -> P m, for one direction or both stacked
Step = Tuple[
    Callable[[torch.Tensor, torch.Tensor], torch.Tensor], Callable[[torch.Tensor], torch.Tensor]
]


def applies(step_bytes: int, inputs: torch.Tensor, needs_grad: bool) -> bool:
    """Whether a layer runs on packed products: float32 on a CPU, no gradient needed, and per-step
    weights too large for the cache."""
    on_cpu = inputs.device.type == "cpu" and inputs.dtype == torch.float32
    return AVAILABLE and on_cpu and not needs_grad and step_bytes >= MIN_STEP_BYTES


class PackedWeights:
    """oneDNN-packed per-direction copies of parameters, keyed by (name, layer) and rebuilt when
    the parameter changes (its storage or version: an optimiser step, a load). Opaque tensors:
    never copied or pickled with the module (see `ProjectedLstmStack.__getstate__`)."""

    def __init__(self) -> None:
        self.packs: Dict[Tuple[str, int], Tuple[Tuple[int, int], List[torch.Tensor]]] = {}

    def clear(self) -> None:
        self.packs.clear()

    def get(
        self, name: str, layer: int, weight: torch.Tensor, batch_hint: int
    ) -> List[torch.Tensor]:
        """The packs of `weight` (2, out, in), one per direction (a view of the parameter
        `name`[`layer`] is fine)."""
        version = (weight.data_ptr(), weight._version)
        key = (name, layer)
        if key not in self.packs or self.packs[key][0] != version:
            with torch.no_grad():
                packs = [
                    torch.ops.mkldnn._reorder_linear_weight(weight[d].contiguous(), batch_hint)
                    for d in range(2)
                ]
            self.packs[key] = (version, packs)
        return self.packs[key][1]

    def input_products(
        self, layer: int, weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor
    ) -> List[torch.Tensor]:
        """Input-to-gate products plus biases of `x` (2, N, in) for `weight` (2, in, 4 dim): one
        (N, 4 dim) tensor per direction (stacking them would copy hundreds of MB)."""
        packs = self.get("input_weights", layer, weight.transpose(1, 2), INPUT_BATCH_HINT)
        linear = torch.ops.mkldnn._linear_pointwise
        return [linear(x[d], packs[d], bias[d, 0], "none", [], "") for d in range(2)]

    def step_products(
        self, layer: int, w_h: torch.Tensor, w_p: torch.Tensor, batch_size: int
    ) -> List[Step]:
        """One `(gate_inputs_t, h) -> gates`, `m -> P m` pair per direction, for the recurrent
        weights `w_h` (2, proj, 4 dim) and the projection `w_p` stored (2, proj, dim)."""
        packed_h = self.get("recurrent_weights", layer, w_h.transpose(1, 2), batch_size)
        packed_p = self.get("projections", layer, w_p, batch_size)  # (2, proj, dim): (out, in)
        linear = torch.ops.mkldnn._linear_pointwise

        def direction(d: int) -> Step:
            return (
                lambda inputs_t, h: linear.binary(h, inputs_t, packed_h[d], None, "add"),
                lambda m: linear(m, packed_p[d], None, "none", [], ""),
            )

        return [direction(0), direction(1)]
