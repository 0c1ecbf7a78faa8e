"""The biLM's contextual part: forward and backward stacks of LSTMs with a projection (Sec. 3.1)."""
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

# oneDNN's prepacked linear: for the small-batch products of the recurrence whose weights do not
# fit in the CPU cache (streamed from memory at every step) it is faster than `bmm`; for small
# weights its per-call overhead loses. Measured here (2-core EPYC, 32 MB L3, batch 32, 2 layers):
# per-step weights of 5 MB per layer (both directions) 175 ms bmm vs 205 ms oneDNN, 20 MB 516 vs
# 502, 40 MB 1018 vs 814, 80 MB (the paper's biLM) 2092 vs 1692.
_ONEDNN = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
_ONEDNN_MIN_BYTES = 32 * 2**20


def reverse_padded(inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of `inputs` (..., batch, T, dim) within its own length.

    Padding stays at the end, so a backward LSTM can run left to right over the result. The
    operation is its own inverse.
    """
    timesteps = inputs.shape[-2]
    steps = torch.arange(timesteps, device=inputs.device)[None, :]
    index = lengths[:, None] - 1 - steps
    index = torch.where(index >= 0, index, steps)  # padding positions map to themselves
    index = index[..., None].expand(inputs.shape[-3:])
    return inputs.gather(-2, index.expand(inputs.shape))


class ProjectedLstmStack(nn.Module):
    """Both directions of the biLM's LSTM stack, run together.

    Each layer of each direction is a TF-style `LSTMCell(num_units=dim, num_proj=projection_dim)`:
    gates `i, j, f, o` from `[x_t; h_{t-1}]`, `c_t = clip(s(f) c_{t-1} + s(i) tanh(j), cell_clip)`,
    `h_t = clip(P (s(o) tanh(c_t)), proj_clip)`, with a residual connection around every layer
    but the first when `use_skip_connections`. The two directions have separate weights; they are
    stacked on a leading axis of size 2 so that every matmul serves both at once. The input-to-gate
    product is computed for all time steps in one matmul, and rows are sorted by length so that
    each step only touches the sentences still running.

    Like TF, the forget gate gets a constant `+1.0` (`forget_bias`) on top of the learned bias,
    so that bilm-tf weights load and export as plain copies.

    # Parameters

    input_dim : `int`
    dim : `int`
        LSTM cells per layer and direction (bilm-tf `lstm.dim`).
    projection_dim : `int`
        Output size of each layer (bilm-tf `lstm.projection_dim`).
    n_layers : `int`
    cell_clip : `float`, optional
    proj_clip : `float`, optional
    use_skip_connections : `bool`, optional (default = `True`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on each layer's input, in training mode only (bilm-tf's `DropoutWrapper`).
    """

    def __init__(
        self,
        input_dim: int,
        dim: int,
        projection_dim: int,
        n_layers: int,
        cell_clip: Optional[float] = None,
        proj_clip: Optional[float] = None,
        use_skip_connections: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.dim = dim
        self.projection_dim = projection_dim
        self.n_layers = n_layers
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.dropout = nn.Dropout(dropout)
        in_dims = [input_dim] + [projection_dim] * (n_layers - 1)
        # Index 0 = forward, 1 = backward; weights are stored as (direction, in, out) for bmm.
        self.input_weights = nn.ParameterList(
            nn.Parameter(torch.empty(2, in_dim, 4 * dim)) for in_dim in in_dims
        )
        self.recurrent_weights = nn.ParameterList(
            nn.Parameter(torch.empty(2, projection_dim, 4 * dim)) for _ in in_dims
        )
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(2, 1, 4 * dim)) for _ in in_dims)
        # stored (direction, proj, dim): the per-step product is faster with this layout
        self.projections = nn.ParameterList(
            nn.Parameter(torch.empty(2, projection_dim, dim)) for _ in in_dims
        )
        forget_bias = torch.zeros(4 * dim)
        forget_bias[2 * dim : 3 * dim] = 1.0
        self.register_buffer("forget_bias", forget_bias, persistent=False)
        # layer -> (weights' identity and version, packed recurrent weights, packed projections)
        self._packed: Dict[int, Tuple[tuple, List[torch.Tensor], List[torch.Tensor]]] = {}
        self.reset_parameters()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_packed"] = {}  # oneDNN's opaque tensors cannot be copied or pickled; rebuilt on use
        return state

    def reset_parameters(self) -> None:
        for params in (self.input_weights, self.recurrent_weights, self.projections):
            for weight in params:
                nn.init.uniform_(weight, -0.05, 0.05)  # TF's default for LSTMCell in bilm-tf
        for bias in self.biases:
            nn.init.zeros_(bias)

    def _packed_weights(self, layer: int, batch_size: int) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        """oneDNN-packed per-direction recurrent and projection weights of `layer`, (out, in)."""
        w_h, w_p = self.recurrent_weights[layer], self.projections[layer]
        version = tuple((p.data_ptr(), p._version) for p in (w_h, w_p))
        if layer not in self._packed or self._packed[layer][0] != version:
            pack = torch.ops.mkldnn._reorder_linear_weight
            with torch.no_grad():
                packed_h = [pack(w_h[d].t().contiguous(), batch_size) for d in range(2)]
                packed_p = [pack(w_p[d].contiguous(), batch_size) for d in range(2)]
            self._packed[layer] = (version, packed_h, packed_p)
        return self._packed[layer][1], self._packed[layer][2]

    def _step_products(
        self, gate_inputs: torch.Tensor, layer: int, batch_size: int
    ) -> Tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]:
        """The two per-step products, `(gate_inputs_t, h) -> gates` and `m -> P m`, both directions.

        oneDNN's packed weights on a CPU when no gradient is needed and the weights are large,
        else `baddbmm` / `bmm`.
        """
        w_h, w_p = self.recurrent_weights[layer], self.projections[layer]
        needs_grad = torch.is_grad_enabled() and (gate_inputs.requires_grad or w_h.requires_grad or w_p.requires_grad)
        step_bytes = (w_h.numel() + w_p.numel()) * w_h.element_size()
        on_cpu = gate_inputs.device.type == "cpu" and gate_inputs.dtype == torch.float32
        if _ONEDNN and on_cpu and not needs_grad and step_bytes >= _ONEDNN_MIN_BYTES:
            packed_h, packed_p = self._packed_weights(layer, batch_size)
            linear = torch.ops.mkldnn._linear_pointwise

            def gates(inputs_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
                return torch.stack([linear.binary(h[d], inputs_t[d], packed_h[d], None, "add") for d in range(2)])

            def project(m: torch.Tensor) -> torch.Tensor:
                return torch.stack([linear(m[d], packed_p[d], None, "none", [], "") for d in range(2)])

            return gates, project
        w_p_t = w_p.transpose(1, 2)  # (2, proj, dim) viewed as (2, dim, proj): faster bmm
        return (lambda inputs_t, h: torch.baddbmm(inputs_t, h, w_h)), (lambda m: torch.bmm(m, w_p_t))

    def _recurrence(self, gate_inputs: torch.Tensor, layer: int, active: List[int]) -> torch.Tensor:
        """Run one layer over packed input gates (2, N, 4*dim) -> packed outputs (2, N, proj).

        Packed as a `PackedSequence`: the `active[t]` running rows of step `t` (rows sorted by
        length, descending) follow those of step `t - 1`; `N = sum(active)`, no padding.
        """
        directions = gate_inputs.shape[0]
        step_gates, project = self._step_products(gate_inputs, layer, active[0])
        h = gate_inputs.new_zeros((directions, active[0], self.projection_dim))
        c = gate_inputs.new_zeros((directions, active[0], self.dim))
        outputs = []
        start = 0
        for n in active:
            h, c = h[:, :n], c[:, :n]
            gates = step_gates(gate_inputs[:, start : start + n], h)
            start += n
            i, j, f, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
            if self.cell_clip is not None:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = project(torch.sigmoid(o) * torch.tanh(c))
            if self.proj_clip is not None:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            outputs.append(h)
        return torch.cat(outputs, dim=1)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> List[torch.Tensor]:
        """`inputs` (batch, T, input_dim), `mask` (batch, T) with sentences left-aligned.

        Returns one `(batch, T, 2 * projection_dim)` tensor per layer, `[forward; backward]`,
        zero at padding. Every sentence starts from a zero state. Between the layers everything
        stays packed (no padding positions), so no product is computed for padding.
        """
        lengths = mask.long().sum(-1)
        sorted_lengths, order = lengths.sort(descending=True)
        restore = order.argsort()
        batch_size, full_t = mask.shape
        timesteps = int(sorted_lengths[0].item()) if lengths.numel() else 0
        if timesteps == 0:
            return [inputs.new_zeros((batch_size, full_t, 2 * self.projection_dim)) for _ in range(self.n_layers)]
        x = inputs[order, :timesteps]
        # Backward direction runs left to right over each sentence reversed within its length;
        # both directions are stacked, time-major, then packed: (2, N, dim).
        x = torch.stack([x, reverse_padded(x, sorted_lengths)]).transpose(1, 2)
        steps = torch.arange(timesteps, device=lengths.device)
        active = (sorted_lengths[None, :] > steps[:, None]).sum(-1).tolist()
        rows = torch.cat([torch.arange(n, device=x.device) + t * batch_size for t, n in enumerate(active)])
        x = x.reshape(2, timesteps * batch_size, -1).index_select(1, rows)
        layers = []
        for layer in range(self.n_layers):
            bias = self.biases[layer] + self.forget_bias  # (2, 1, 4 * dim)
            # input-to-gate products for all running positions at once: (2, N, in) @ (2, in, 4 * dim)
            gate_inputs = torch.baddbmm(bias, self.dropout(x), self.input_weights[layer])
            out = self._recurrence(gate_inputs, layer, active)
            if layer > 0 and self.use_skip_connections:
                out = out + x
            layers.append(out)
            x = out
        results = []
        for out in layers:
            padded = out.new_zeros((2, timesteps * batch_size, self.projection_dim)).index_copy(1, rows, out)
            padded = padded.view(2, timesteps, batch_size, self.projection_dim).transpose(1, 2)  # (2, batch, T, proj)
            both = torch.cat([padded[0], reverse_padded(padded[1], sorted_lengths)], dim=-1)[restore]
            if full_t > timesteps:
                both = nn.functional.pad(both, (0, 0, 0, full_t - timesteps))
            results.append(both)
        return results
