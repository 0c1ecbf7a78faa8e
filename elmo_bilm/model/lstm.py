"""The biLM's contextual part: forward and backward stacks of LSTMs with a projection (Sec. 3.1)."""

import functools
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union

import torch
from torch import nn

from elmo_bilm.model import fused_cell, onednn, routes
from elmo_bilm.model.onednn import Step
from elmo_bilm.utils.errors import UsageError

# a layer stack's or one layer's carried LSTM states: (h, c), `[forward; backward]` on the last axis
_Carried = Tuple[torch.Tensor, torch.Tensor]
# bytes of one direction's input gates computed at once on the per-direction routes (`InputBlocks`)
INPUT_BLOCK_BYTES = 16 * 2**20


class InputBlocks:
    """One direction's input-to-gate products for the packed positions, computed a block of
    consecutive steps at a time as the recurrence reaches them, each block at most `max_rows`
    rows (at least one step).

    All positions at once made the gates of a whole batch one tensor (positions x 4 dim floats:
    hundreds of MB at the paper size), freshly allocated, and so freshly paged in by the kernel,
    for every layer and direction; blocks this size are reused by the allocator and bound that
    memory by the block instead of the batch (docs/performance.md, "Input gates by blocks of
    steps").

    # Parameters

    gates : `Callable[[int, int], torch.Tensor]`
        `(start, end)` -> the gate inputs of packed rows `start:end`, `(end - start, 4 dim)`.
    max_rows : `int`
    """

    def __init__(self, gates: Callable[[int, int], torch.Tensor], max_rows: int) -> None:
        self.gates = gates
        self.max_rows = max(1, max_rows)

    @classmethod
    def product(
        cls, linear: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, max_rows: int
    ) -> "InputBlocks":
        """`linear` of each block's rows of the packed inputs `x` (N, in)."""
        return cls(lambda start, end: linear(x[start:end]), max_rows)

    @classmethod
    def gathered(cls, gates: torch.Tensor, index: torch.Tensor, max_rows: int) -> "InputBlocks":
        """Rows `index` (N,) of the distinct words' gates (U, 4 dim), a block at a time."""
        return cls(lambda start, end: gates.index_select(0, index[start:end]), max_rows)

    def per_step(self, active: Sequence[int]) -> Iterator[torch.Tensor]:
        """Each step's `(active[t], 4 dim)` gate inputs, in step order."""
        start = t = 0
        while t < len(active):
            end, rows = t + 1, active[t]
            while end < len(active) and rows + active[end] <= self.max_rows:
                rows += active[end]
                end += 1
            yield from self.gates(start, start + rows).split(list(active[t:end]))
            start, t = start + rows, end


# what the recurrence runs over: the `bmm` route's products of both directions stacked, or one
# direction's blocks
Stream = Union[torch.Tensor, InputBlocks]


class Products(Protocol):
    """Per-direction products of an inference precision (`elmo_bilm.runtime.precision`), in place of
    the float32 ones: the interface of `onednn.PackedWeights`, plus the stack."""

    def input_linears(
        self,
        stack: "ProjectedLstmStack",
        layer: int,
        bias: torch.Tensor,
        directions: Sequence[int] = (0, 1),
    ) -> List[Callable[[torch.Tensor], torch.Tensor]]:
        """Per direction of `directions`, `x -> x W + bias` with `layer`'s input weights."""

    def step_products(
        self,
        stack: "ProjectedLstmStack",
        layer: int,
        batch_size: int,
        directions: Sequence[int] = (0, 1),
    ) -> List[Step]:
        """Per direction of `directions`, `layer`'s step products (recurrent and projection),
        made for `batch_size` rows."""

    @property
    def cell_dtype(self) -> Optional[torch.dtype]:
        """The cell state's dtype (None: the streams')."""


def lstm_cell(
    gates: torch.Tensor, c: torch.Tensor, cell_clip: Optional[float], fused: bool = False
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The pointwise part of one step: gates `i, j, f, o` and the previous cell -> the clipped cell
    and `s(o) tanh(c)` (the input of the projection; `proj_clip` applies after the projection).

    `fused`: in one compiled pass (`elmo_bilm.model.fused_cell`) where it applies, as the
    per-direction CPU routes ask (float32 results, within a few float32 ulps of the eager ops)."""
    if fused:
        out = fused_cell.lstm_cell(gates, c, cell_clip)
        if out is not None:
            return out
    return fused_cell.eager_cell(gates, c, cell_clip)


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
    initialise : `bool`, optional (default = `True`)
        Draw bilm-tf's initial weights; `False` leaves them to a loader that overwrites them all.
    """

    # an inference precision's products (`elmo_bilm.runtime.precision.set_precision`); None: float32.
    # A class attribute, so that stacks pickled before it existed unpickle with the default.
    products: Optional[Products] = None
    # AllenNLP's stateful mode (`Elmo(stateful=True)`): carry each batch row's final LSTM states
    # into the same row of the next batch. Class attributes too, for stacks pickled before them.
    stateful: bool = False
    _carried: Optional[_Carried] = None

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
        initialise: bool = True,
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
        # oneDNN's packed copies of the weights (CPU inference at large sizes; `elmo_bilm.model.onednn`)
        self._packed = onednn.PackedWeights()
        if initialise:
            self.reset_parameters()

    def _apply(self, fn, recurse: bool = True):  # type: ignore[no-untyped-def]
        """`.to()`, `.cuda()`, `.double()`, ...: the oneDNN packs belong to the old tensors, drop
        them (hundreds of MB at the paper size) rather than keep them until the next use."""
        self._packed.clear()
        return super()._apply(fn, recurse)

    @property
    def states(self) -> Tuple[torch.Tensor, ...]:
        """The LSTM states carried between batches: `(h, c)`, `(n_layers, rows, 2 *
        projection_dim)` and `(n_layers, rows, 2 * dim)`, `[forward; backward]`, once a
        stateful stack has run; else an empty tuple (zero states)."""
        return self._carried if self._carried is not None else ()

    @states.setter
    def states(self, states: Optional[Tuple[torch.Tensor, ...]]) -> None:
        if states is None or (isinstance(states, (tuple, list)) and not states):
            self._carried = None
        elif not self.stateful:
            raise ValueError("the biLM is stateless (elmo_bilm): it has no LSTM states to set")
        else:
            self._carried = self._checked_states(states)

    def _checked_states(self, states: object) -> _Carried:
        """`states` as `(h, c)` if this stack can carry them (any rows, a floating dtype), else
        one `UsageError` naming the shapes it expects: states of another biLM, set by hand,
        failed only inside the recurrence at the next batch."""
        if isinstance(states, (tuple, list)) and len(states) == 2:
            h, c = states
            if (
                isinstance(h, torch.Tensor)
                and isinstance(c, torch.Tensor)
                and h.dim() == c.dim() == 3
                and h.shape[::2] == (self.n_layers, 2 * self.projection_dim)
                and c.shape[::2] == (self.n_layers, 2 * self.dim)
                and h.shape[1] == c.shape[1]
                and h.is_floating_point()
                and c.is_floating_point()
            ):
                return h, c
        if isinstance(states, torch.Tensor):
            got = f"one tensor {tuple(states.shape)}"
        elif isinstance(states, (tuple, list)):
            got = ", ".join(
                f"{tuple(s.shape)} {str(s.dtype).replace('torch.', '')}"
                if isinstance(s, torch.Tensor)
                else type(s).__name__
                for s in states
            )
            got = f"{len(states)}: {got}" if len(states) != 2 else got
        else:
            got = type(states).__name__
        raise UsageError(
            f"LSTM states must be (h, c) as `states` gives them: float tensors h "
            f"({self.n_layers}, rows, {2 * self.projection_dim}) and c ({self.n_layers}, rows, "
            f"{2 * self.dim}) (layers, rows, [forward; backward]) for this biLM; got {got}"
        )

    @property
    def _states(self) -> Tuple[torch.Tensor, ...]:
        """AllenNLP's name of `states` (`_EncoderBase._states`), which code written for it
        reaches: an empty tuple rather than `None` for zero states, so that code moving the
        states to a device (flair's legacy `ELMoEmbeddings` does after unpickling) works."""
        return self.states

    @_states.setter
    def _states(self, states: Optional[Tuple[torch.Tensor, ...]]) -> None:
        self.states = states  # type: ignore[assignment]

    def reset_states(self, mask: Optional[torch.Tensor] = None) -> None:
        """AllenNLP's `reset_states`: forget the carried states, of every row or (`mask`,
        `(rows,)`, true = reset) of some; a stateless stack has none to forget."""
        if mask is None or self._carried is None:
            self._carried = None
            return
        rows = self._carried[0].shape[1]
        if mask.shape[0] != rows:
            raise ValueError(
                "Trying to reset states using mask with incorrect batch size. "
                f"Expected batch size: {rows}. Provided batch size: {mask.shape[0]}."
            )
        keep = ~mask.bool().view(1, rows, 1).to(self._carried[0].device)
        self._carried = (self._carried[0] * keep, self._carried[1] * keep)

    def _initial_states(self, packing: "_Packing", device: torch.device) -> Optional[_Carried]:
        """The carried states of this batch's running rows in its length-sorted order, AllenNLP's
        `_EncoderBase._get_initial_states`: `None` before the first batch (zero states); rows past
        the carried ones are added as zeros (kept from now on), a smaller batch takes the first
        rows; then sorted like the batch and cut to its non-empty rows."""
        if self._carried is None:
            return None
        h, c = (state.to(device) for state in self._carried)
        batch = packing.batch_size
        if batch > h.shape[1]:
            h = torch.cat([h, h.new_zeros(h.shape[0], batch - h.shape[1], h.shape[2])], 1)
            c = torch.cat([c, c.new_zeros(c.shape[0], batch - c.shape[1], c.shape[2])], 1)
        self._carried = (h, c)
        valid = packing.active[0]
        return (
            h[:, :batch].index_select(1, packing.order)[:, :valid],
            c[:, :batch].index_select(1, packing.order)[:, :valid],
        )

    def row_states(self, device: torch.device) -> Optional[List[List[_Carried]]]:
        """Stateful, for a batch of one row (`elmo_bilm.model.chunked`): the states row 0
        starts from, per direction (0 forward, 1 backward) each layer's `(h (1, proj), c (1,
        dim))`, as `forward` takes them; None when a batch would start from zeros (stateless, or
        nothing carried yet)."""
        if not self.stateful:
            return None
        initial = self._initial_states(_Packing.single(device), device)
        if initial is None:
            return None
        h, c = initial
        proj, dim = self.projection_dim, self.dim
        return [
            [(h[layer][:, :proj], c[layer][:, :dim]) for layer in range(self.n_layers)],
            [(h[layer][:, proj:], c[layer][:, dim:]) for layer in range(self.n_layers)],
        ]

    def keep_row_states(self, forward: List[_Carried], backward: List[_Carried]) -> None:
        """Stateful: keep a one-row batch's final states, each layer's `(h, c)` per direction
        (the forward's after the last position, the backward's after the first), as `forward`
        keeps a batch's; stateless: nothing."""
        if not self.stateful:
            return
        finals = [
            (torch.cat([f[0], b[0].to(f[0].dtype)], -1), torch.cat([f[1], b[1].to(f[1].dtype)], -1))
            for f, b in zip(forward, backward)
        ]
        self._save_states(finals, _Packing.single(finals[0][0].device))

    def _save_states(self, finals: List[_Carried], packing: "_Packing") -> None:
        """Keep the batch's final states, AllenNLP's `_EncoderBase._update_states`: back in the
        batch's row order, padded to the batch with zero rows for empty sentences; a row replaces
        its carried state only where it ran (AllenNLP's test: its first layer's state is not all
        zero), the carried rows past the batch stay."""
        h = torch.stack([layer[0] for layer in finals])
        c = torch.stack([layer[1] for layer in finals])
        missing = packing.batch_size - h.shape[1]
        if missing > 0:
            h = torch.cat([h, h.new_zeros(h.shape[0], missing, h.shape[2])], 1)
            c = torch.cat([c, c.new_zeros(c.shape[0], missing, c.shape[2])], 1)
        new = [
            h.index_select(1, packing.restore).detach(),
            c.index_select(1, packing.restore).detach(),
        ]
        if self._carried is None:
            self._carried = (new[0], new[1])
            return
        kept = []
        for old, state in zip(self._carried, new):
            rows = state.shape[1]
            if old.shape[1] < rows:  # states set by hand for fewer rows: the others start at zero
                old = torch.cat(
                    [old, old.new_zeros(old.shape[0], rows - old.shape[1], old.shape[2])], 1
                )
            used = (state[0].sum(-1) != 0).view(1, rows, 1)
            updated = torch.where(used, state, old[:, :rows].to(state.dtype))
            kept.append(torch.cat([updated, old[:, rows:].to(state.dtype)], 1))
        self._carried = (kept[0], kept[1])

    def reset_parameters(self) -> None:
        """bilm-tf's initialisation (TF's default for its `LSTMCell` variables): Glorot-uniform
        over each direction's whole `W_0` `[in + proj, 4 * dim]` (split here into input and
        recurrent parts) and `W_P_0` `[dim, proj]`, zero biases."""
        with torch.no_grad():
            for w_x, w_h, w_p in zip(self.input_weights, self.recurrent_weights, self.projections):
                bound = (6.0 / (w_x.shape[1] + w_h.shape[1] + w_x.shape[2])) ** 0.5
                w_x.uniform_(-bound, bound)
                w_h.uniform_(-bound, bound)
                bound = (6.0 / (w_p.shape[1] + w_p.shape[2])) ** 0.5
                w_p.uniform_(-bound, bound)
        for bias in self.biases:
            nn.init.zeros_(bias)

    def _route(self, layer: int, inputs: torch.Tensor) -> str:
        """Which products `layer` runs on: `"products"` (an inference precision's, when no
        gradient is needed), `"onednn"` (oneDNN's packed float32 products,
        `elmo_bilm.model.onednn.applies`) or `"bmm"`. The first two keep one stream per direction."""
        weights = [
            self.input_weights[layer],
            self.recurrent_weights[layer],
            self.projections[layer],
            self.biases[layer],
        ]
        needs_grad = torch.is_grad_enabled() and (
            inputs.requires_grad or any(w.requires_grad for w in weights)
        )
        if self.products is not None and not needs_grad:
            return "products"
        step_bytes = (weights[1].numel() + weights[2].numel()) * weights[1].element_size()
        return "onednn" if onednn.applies(step_bytes, inputs, needs_grad) else "bmm"

    def _input_products(self, x: torch.Tensor, layer: int, route: str) -> List[torch.Tensor]:
        """Input-to-gate products plus biases for all positions at once, `x` (2, N, in).

        Returns the recurrence's streams: one (2, N, 4 * dim) tensor for both directions, or with
        oneDNN or a precision's products one (N, 4 * dim) tensor per direction.
        """
        if route == "bmm":
            bias = self.biases[layer] + self.forget_bias  # (2, 1, 4 * dim)
            return [torch.baddbmm(bias, x, self.input_weights[layer])]
        return [linear(x[d]) for d, linear in enumerate(self._input_linears(layer, route))]

    @property
    def _block_rows(self) -> int:
        """Rows of an `InputBlocks` block: `INPUT_BLOCK_BYTES` of float32 gates."""
        return INPUT_BLOCK_BYTES // (4 * self.dim * 4)

    def _input_linears(
        self, layer: int, route: str, directions: Sequence[int] = (0, 1)
    ) -> List[Callable[[torch.Tensor], torch.Tensor]]:
        """The per-direction routes' input-to-gate products, one `x (N, in) -> (N, 4 * dim)` per
        direction of `directions`, their weights prepared now (checked, then packed or cast if
        they changed) in the calling thread."""
        bias = self.biases[layer] + self.forget_bias  # (2, 1, 4 * dim)
        if route == "products":
            assert self.products is not None
            return self.products.input_linears(self, layer, bias, directions)
        return self._packed.input_linears(
            layer, self.input_weights[layer], bias, directions, self._block_rows
        )

    def _step_products(
        self, layer: int, route: str, batch_size: int, directions: Sequence[int] = (0, 1)
    ) -> List[Step]:
        """The per-step products `(gate_inputs_t, h) -> gates` and `m -> P m`: with oneDNN or a
        precision's products one pair per direction of `directions`, else one `baddbmm` /
        `bmm` pair for both directions stacked."""
        if route == "products":
            assert self.products is not None
            return self.products.step_products(self, layer, batch_size, directions)
        if route == "onednn":
            return self._packed.step_products(
                layer,
                self.recurrent_weights[layer],
                self.projections[layer],
                batch_size,
                directions,
            )
        w_h, w_p_t = self._step_weights(layer)
        return [
            ((lambda inputs_t, h: torch.baddbmm(inputs_t, h, w_h)), (lambda m: torch.bmm(m, w_p_t)))
        ]

    def _step_weights(self, layer: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """`W_h` (2, proj, 4 dim) and `P` viewed as (2, dim, proj) (the faster bmm layout), in the
        compute dtype. Cast once per forward under autocast: autocast caches casts only of leaves
        that require grad, so a frozen biLM's weights would be cast again at every step. The cell
        state stays float32 (elementwise ops follow type promotion from a float32 start)."""
        w_h, w_p_t = self.recurrent_weights[layer], self.projections[layer].transpose(1, 2)
        device = w_h.device.type
        if torch.is_autocast_enabled(device):
            dtype = torch.get_autocast_dtype(device)
            w_h, w_p_t = w_h.to(dtype), w_p_t.to(dtype)
        return w_h, w_p_t

    def _recurrence(
        self,
        streams: Sequence[Stream],
        layer: int,
        active: List[int],
        route: str,
        initial: Optional[_Carried] = None,
        finals: Optional[List[_Carried]] = None,
        steps: Optional[List[Step]] = None,
        start: Optional[_Carried] = None,
        last: Optional[List[_Carried]] = None,
    ) -> torch.Tensor:
        """Run one layer over packed input gates -> packed outputs (2, N, proj).

        `streams`: the `bmm` route's stacked products (`_input_products`), or one `InputBlocks`
        per direction, or one direction's alone with its `steps` (then the result is that
        direction's (N, proj)). Packed as a `PackedSequence`: the
        `active[t]` running rows of step `t` (rows sorted by length, descending) follow those of
        step `t - 1`; `N = sum(active)`, no padding.

        Stateful mode only: `initial`, this layer's `(h (rows, 2 * proj), c (rows, 2 * dim))`
        `[forward; backward]` to start from instead of zeros; `finals` gets each row's last `(h,
        c)` in the same layout appended (a row's last step is its last position forward, its
        first backward, as in AllenNLP).

        One direction's stream alone (`_direction`): `start`, its `(h (rows, proj), c (rows,
        dim))` to start from; `last` gets its `(h, c)` after the last step appended.
        """
        cell_dtype = self.products.cell_dtype if route == "products" and self.products else None
        # one direction's (n, 4 dim) gates, no gradient: the cell's route as timed here
        fused = (
            route != "bmm" and routes.route("cell", self.dim, 4 * self.dim, active[0]) == "fused"
        )
        # One split per stacked stream, not a slice per step: the backward of a slice allocates a
        # zero tensor of the whole stream, which made a layer's backward quadratic in the length.
        per_step = [
            x.per_step(active) if isinstance(x, InputBlocks) else iter(x.split(active, dim=-2))
            for x in streams
        ]
        first = [next(steps_k) for steps_k in per_step]  # the states take their shape and dtype
        per_step = [itertools.chain([x], steps_k) for x, steps_k in zip(first, per_step)]
        if start is not None:  # one direction's states, in the dtypes of the zeros they replace
            h = [start[0].to(first[0].dtype).contiguous()]
            c = [start[1].to(cell_dtype or first[0].dtype).contiguous()]
        elif initial is None:
            h = [x.new_zeros(x.shape[:-2] + (active[0], self.projection_dim)) for x in first]
            c = [x.new_zeros(x.shape[:-2] + (active[0], self.dim), dtype=cell_dtype) for x in first]
        else:
            h, c = self._split_directions(initial, first, cell_dtype)
        ended: List[Tuple[List[torch.Tensor], List[torch.Tensor]]] = []
        outputs: List[List[torch.Tensor]] = [[] for _ in streams]
        if steps is None:
            steps = self._step_products(layer, route, active[0])
        for t, n in enumerate(active):
            for k, (step_gates, project) in enumerate(steps):
                gates = step_gates(next(per_step[k]), h[k][..., :n, :])
                c[k], m = lstm_cell(gates, c[k][..., :n, :], self.cell_clip, fused)
                h[k] = project(m)
                if self.proj_clip is not None:
                    h[k] = h[k].clamp(-self.proj_clip, self.proj_clip)
                outputs[k].append(h[k])
            if finals is not None:
                # rows past the next step's running ones end here: keep their states
                following = active[t + 1] if t + 1 < len(active) else 0
                if following < n:
                    ended.append(
                        (
                            [h_k[..., following:, :] for h_k in h],
                            [c_k[..., following:, :] for c_k in c],
                        )
                    )
        if finals is not None:
            finals.append(self._join_directions(ended[::-1]))
        if last is not None:
            last.extend(zip(h, c))
        joined = [torch.cat(out, dim=-2) for out in outputs]
        if route == "products":  # a precision's outputs may be bfloat16: layers are float32
            joined = [out.float() for out in joined]
        return torch.stack(joined) if len(joined) == 2 else joined[0]

    def _split_directions(
        self, state: _Carried, streams: List[torch.Tensor], cell_dtype: Optional[torch.dtype]
    ) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        """`(h (rows, 2 * proj), c (rows, 2 * dim))` `[forward; backward]` -> the recurrence's
        `h` and `c` lists: one `(2, rows, .)` pair for both directions stacked, or one `(rows,
        .)` pair per direction, in the dtypes of the zero states they replace."""
        h, c = state
        h_parts = [h[:, : self.projection_dim], h[:, self.projection_dim :]]
        c_parts = [c[:, : self.dim], c[:, self.dim :]]
        dtype = streams[0].dtype
        if len(streams) == 1:
            return (
                [torch.stack(h_parts).to(dtype)],
                [torch.stack(c_parts).to(cell_dtype or dtype)],
            )
        return (
            [part.to(x.dtype).contiguous() for part, x in zip(h_parts, streams)],
            [part.to(cell_dtype or x.dtype).contiguous() for part, x in zip(c_parts, streams)],
        )

    @staticmethod
    def _join_directions(
        ended: List[Tuple[List[torch.Tensor], List[torch.Tensor]]],
    ) -> _Carried:
        """The recurrence's final states, collected as row blocks from the first rows to the
        last -> `(h (rows, 2 * proj), c (rows, 2 * dim))` `[forward; backward]`."""
        joined = []
        for part in (0, 1):
            streams = [torch.cat(parts, dim=-2) for parts in zip(*(block[part] for block in ended))]
            pair = list(streams[0]) if len(streams) == 1 else streams
            joined.append(torch.cat(pair, dim=-1))
        return joined[0], joined[1]

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.Tensor,
        distinct: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    ) -> List[torch.Tensor]:
        """`inputs` (batch, T, input_dim), `mask` (batch, T) with sentences left-aligned.

        `distinct`, optional: `(vectors (U, input_dim), index (batch, T))` with
        `inputs[b, t] == vectors[index[b, t]]` at every real position (the char CNN's distinct
        words). When the input dropout is off, the first layer's input-to-gate products are
        then computed once per distinct word instead of once per position (exact: each row of a
        product depends only on its own input).

        Returns one `(batch, T, 2 * projection_dim)` tensor per layer, `[forward; backward]`,
        zero at padding. Every sentence starts from a zero state, unless `stateful`: then from
        the states its row of the previous batch ended with (AllenNLP's stateful `ElmoLstm`).
        Between the layers everything stays packed (no padding positions), so no product is
        computed for padding.
        """
        packing = _Packing(mask)
        if packing.timesteps == 0:
            shape = (*mask.shape, 2 * self.projection_dim)
            return [inputs.new_zeros(shape) for _ in range(self.n_layers)]
        by_word = distinct is not None and not (self.training and self.dropout.p > 0)
        # the first layer has no residual connection: by word, its packed inputs are not needed
        x = None if by_word else packing.pack(inputs)
        routes = [self._route(layer, inputs) for layer in range(self.n_layers)]
        if self._directions_at_once(routes, inputs):
            word = None
            if by_word:
                assert distinct is not None
                word = (distinct[0], packing.pack(distinct[1][..., None])[..., 0])
            directions = _DIRECTION_THREADS.run(
                [
                    functools.partial(
                        self._direction,
                        d,
                        routes,
                        packing.active,
                        None if x is None else x[d],
                        None if word is None else (word[0], word[1][d]),
                    )
                    for d in range(2)
                ]
            )
            return [
                packing.unpack(torch.stack(pair), self.projection_dim) for pair in zip(*directions)
            ]
        initial = self._initial_states(packing, inputs.device) if self.stateful else None
        finals: Optional[List[_Carried]] = [] if self.stateful else None
        layers = []
        for layer, route in enumerate(routes):
            streams: Sequence[Stream]
            if layer == 0 and by_word:
                assert distinct is not None
                streams = self._word_streams(distinct, packing, route)
            elif route == "bmm":
                assert x is not None  # every layer but a by-word first has its packed input
                streams = self._input_products(self.dropout(x), layer, route)
            else:
                assert x is not None
                x_in = self.dropout(x)
                linears = self._input_linears(layer, route)
                streams = [
                    InputBlocks.product(linear, x_in[d], self._block_rows)
                    for d, linear in enumerate(linears)
                ]
            start = None if initial is None else (initial[0][layer], initial[1][layer])
            out = self._recurrence(streams, layer, packing.active, route, start, finals)
            if layer > 0 and self.use_skip_connections:
                assert x is not None
                out = out + x
            layers.append(out)
            x = out
        if finals is not None:
            self._save_states(finals, packing)
        return [packing.unpack(out, self.projection_dim) for out in layers]

    def _directions_at_once(self, routes: List[str], inputs: torch.Tensor) -> bool:
        """Whether the two directions run at once, each in a thread of its own
        (`_DirectionThreads`): on a CPU with two or more intra-op threads, every layer on a
        per-direction route (no gradient needed), no input dropout, no carried states and no
        autocast (both thread-local states the threads would not see)."""
        return (
            inputs.device.type == "cpu"
            and torch.get_num_threads() >= 2
            and all(route != "bmm" for route in routes)
            and not (self.training and self.dropout.p > 0)
            and not self.stateful
            and not torch.is_autocast_enabled("cpu")
        )

    def _direction(
        self,
        d: int,
        routes: List[str],
        active: List[int],
        x_d: Optional[torch.Tensor],
        word: Optional[Tuple[torch.Tensor, torch.Tensor]],
        starts: Optional[Sequence[_Carried]] = None,
        lasts: Optional[List[_Carried]] = None,
    ) -> List[torch.Tensor]:
        """Direction `d`'s stack over the packed batch (in a thread of `_DirectionThreads`: the
        directions share nothing but the input, and each checks and packs its own weights),
        each layer on its route: each layer's packed outputs (N, proj).

        `x_d`: the direction's packed inputs (N, in), or with `word` = `(vectors (U, in), index
        (N,))` the first layer's input products are taken per distinct word and gathered.
        `starts`, optional: each layer's `(h (rows, proj), c (rows, dim))` of this direction to
        start from instead of zeros; `lasts` gets each layer's states after the last step (the
        rows still running then: every row's final states when all end together, as in
        `run_direction`)."""
        outputs = []
        for layer, route in enumerate(routes):
            linear, step = self._direction_products(layer, route, active[0], d)
            if layer == 0 and word is not None:
                stream = InputBlocks.gathered(linear(word[0]), word[1], self._block_rows)
            else:
                assert x_d is not None
                stream = InputBlocks.product(linear, x_d, self._block_rows)
            start = None if starts is None else starts[layer]
            out = self._recurrence(
                [stream], layer, active, route, steps=[step], start=start, last=lasts
            )
            if layer > 0 and self.use_skip_connections:
                assert x_d is not None
                out = out + x_d
            outputs.append(out)
            x_d = out
        return outputs

    def _direction_products(
        self, layer: int, route: str, batch_size: int, d: int
    ) -> Tuple[Callable[[torch.Tensor], torch.Tensor], Step]:
        """Direction `d`'s input-to-gate product `x (N, in) -> (N, 4 dim)` and step products on
        `layer`'s route; on the `bmm` route plain products of that direction's slice of the
        weights (the route of a GPU and of small biLMs)."""
        if route != "bmm":
            (linear,) = self._input_linears(layer, route, (d,))
            (step,) = self._step_products(layer, route, batch_size, (d,))
            return linear, step
        bias = (self.biases[layer] + self.forget_bias)[d, 0]
        w_x = self.input_weights[layer][d]
        w_h, w_p_t = (w[d] for w in self._step_weights(layer))
        return (
            lambda x: torch.addmm(bias, x, w_x),
            (lambda inputs_t, h: torch.addmm(inputs_t, h, w_h), lambda m: torch.mm(m, w_p_t)),
        )

    def run_direction(
        self,
        d: int,
        inputs: torch.Tensor,
        distinct: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        starts: Optional[Sequence[_Carried]] = None,
    ) -> Tuple[List[torch.Tensor], List[_Carried]]:
        """Direction `d`'s stack (0 forward, 1 backward) over one sequence's steps, in the
        order given: `inputs` `(T, input_dim)` (a backward run passes them reversed), from
        `starts` (each layer's `(h (1, proj), c (1, dim))`; None: zeros). Returns each layer's
        outputs `(T, proj)` in the same step order and each layer's states after the last step.

        What `elmo_bilm.model.chunked` runs a sequence longer than the token budget with, a
        chunk at a time, carrying the states from chunk to chunk: the same recurrence, routes
        and products as `forward`. `distinct`: `(vectors (U, input_dim), index (T,))` of the
        char CNN's distinct words, as in `forward` (the first layer's products per word)."""
        routes = [self._route(layer, inputs) for layer in range(self.n_layers)]
        lasts: List[_Carried] = []
        outputs = self._direction(d, routes, [1] * inputs.shape[0], inputs, distinct, starts, lasts)
        return outputs, lasts

    def _word_streams(
        self,
        distinct: Tuple[torch.Tensor, torch.Tensor],
        packing: "_Packing",
        route: str,
    ) -> List[Stream]:
        """The first layer's input gates from each distinct word's product, gathered into the
        packed order of both directions (by blocks on the per-direction routes)."""
        vectors, index = distinct
        word_streams = self._input_products(vectors.expand(2, -1, -1), 0, route)
        word_index = packing.pack(index[..., None])[..., 0]  # (2, N)
        if route != "bmm":
            return [
                InputBlocks.gathered(g, word_index[d], self._block_rows)
                for d, g in enumerate(word_streams)
            ]
        gathered = [word_streams[0][d].index_select(0, word_index[d]) for d in range(2)]
        return [torch.stack(gathered)]


T = TypeVar("T")


class _DirectionThreads:
    """Two threads that run a batch's forward and backward stacks at once on a CPU, each with
    half of torch's intra-op threads (`torch.get_num_threads()` of the caller, at least one).

    The per-step work of one direction (two products and a dozen small element-wise ops) then
    never waits at a barrier for the other core, which is what intra-op threading of those
    small ops does at every op; the two stacks share nothing. Grad mode and autocast are
    thread-local, so each task runs under `torch.no_grad()` (only routes that need no gradient
    come here) and autocast is excluded by the caller. The threads are made on first use, and
    again in a child process after a fork (threads do not survive one)."""

    def __init__(self) -> None:
        self._pools: List[ThreadPoolExecutor] = []
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._pools = []
        self._lock = threading.Lock()

    def run(self, tasks: Sequence[Callable[[], T]]) -> List[T]:
        """The tasks' results, task `i` run in thread `i` (at most two tasks).

        One single-thread executor per task: a shared pool of two lets an idle worker that
        finished the first task take the second too, so the directions would run one after the
        other in one thread."""
        return self._run(list(enumerate(tasks)), max(1, torch.get_num_threads() // len(tasks)))

    def run_alone(self, d: int, task: Callable[[], T]) -> T:
        """`task()` in direction `d`'s thread with all the caller's intra-op threads: memory
        that the thread frees goes back to its own allocator arena (glibc keeps one per
        thread), which that direction's next runs reuse instead of touching more."""
        (result,) = self._run([(d, task)], torch.get_num_threads())
        return result

    def _run(self, tasks: Sequence[Tuple[int, Callable[[], T]]], per_thread: int) -> List[T]:
        total = torch.get_num_threads()
        with self._lock:
            if not self._pools:
                self._pools = [
                    ThreadPoolExecutor(1, thread_name_prefix=f"elmo-bilm-direction-{i}")
                    for i in range(2)
                ]
            futures = [self._pools[d].submit(_threaded, task, per_thread) for d, task in tasks]
        results = [future.result() for future in futures]
        if any(changed for changed, _ in results):
            # a thread's `set_num_threads` is also the default of threads started later: the
            # caller's setting is restored as that default (its own threads keep theirs)
            torch.set_num_threads(total)
        return [result for _, result in results]


def _threaded(task: Callable[[], T], threads: int) -> Tuple[bool, T]:
    """`task()` without gradient, this thread's intra-op threads set to `threads` first; and
    whether they had to be set."""
    changed = torch.get_num_threads() != threads
    if changed:
        torch.set_num_threads(threads)
    with torch.no_grad():
        return changed, task()


_DIRECTION_THREADS = _DirectionThreads()


def _threads_apply(inputs: torch.Tensor) -> bool:
    """Whether `ProjectedLstmStack.forward` would run the directions in `_DirectionThreads`: a
    CPU with two or more intra-op threads, no gradient, no autocast."""
    return (
        inputs.device.type == "cpu"
        and torch.get_num_threads() >= 2
        and not torch.is_grad_enabled()
        and not torch.is_autocast_enabled("cpu")
    )


def run_directions(tasks: Sequence[Callable[[], T]], inputs: torch.Tensor) -> List[T]:
    """The two directions' tasks (no gradient needed), at once in `_DirectionThreads` where
    `ProjectedLstmStack.forward` would run them so, else one after the other."""
    if _threads_apply(inputs):
        return _DIRECTION_THREADS.run(tasks)
    return [task() for task in tasks]


def run_direction_alone(d: int, task: Callable[[], T], inputs: torch.Tensor) -> T:
    """One direction's task alone (no gradient needed), in direction `d`'s thread of
    `_DirectionThreads` where `run_directions` would use them (`_DirectionThreads.run_alone`),
    else here."""
    if _threads_apply(inputs):
        return _DIRECTION_THREADS.run_alone(d, task)
    return task()


class _Packing:
    """How a batch's sentences are packed for the recurrence: rows sorted by length
    (descending), time-major, only the running positions, the backward direction reversed
    within each length; `active[t]` rows run at step `t`."""

    def __init__(self, mask: torch.Tensor) -> None:
        lengths = mask.long().sum(-1)
        self.sorted_lengths, self.order = lengths.sort(descending=True)
        self.restore = self.order.argsort()
        self.batch_size, self.full_t = mask.shape
        self.timesteps = int(self.sorted_lengths[0].item()) if lengths.numel() else 0
        steps = torch.arange(self.timesteps, device=lengths.device)
        self.active: List[int] = (self.sorted_lengths[None, :] > steps[:, None]).sum(-1).tolist()
        self.rows = (
            torch.cat(
                [
                    torch.arange(n, device=mask.device) + t * self.batch_size
                    for t, n in enumerate(self.active)
                ]
            )
            if self.active
            else torch.zeros(0, dtype=torch.long, device=mask.device)
        )

    @classmethod
    def single(cls, device: torch.device) -> "_Packing":
        """The packing of a batch of one row (its length does not matter to the states)."""
        return cls(torch.ones(1, 1, dtype=torch.bool, device=device))

    def pack(self, values: torch.Tensor) -> torch.Tensor:
        """(batch, T, k) -> (2, N, k)."""
        values = values[self.order, : self.timesteps]
        both = torch.stack([values, reverse_padded(values, self.sorted_lengths)]).transpose(1, 2)
        return both.reshape(2, self.timesteps * self.batch_size, -1).index_select(1, self.rows)

    def unpack(self, out: torch.Tensor, dim: int) -> torch.Tensor:
        """(2, N, dim) -> (batch, T, 2 * dim) `[forward; backward]` in the input's row order,
        zero at padding."""
        padded = out.new_zeros((2, self.timesteps * self.batch_size, dim)).index_copy(
            1, self.rows, out
        )
        padded = padded.view(2, self.timesteps, self.batch_size, dim).transpose(1, 2)
        both = torch.cat([padded[0], reverse_padded(padded[1], self.sorted_lengths)], dim=-1)
        both = both[self.restore]
        if self.full_t > self.timesteps:
            both = nn.functional.pad(both, (0, 0, 0, self.full_t - self.timesteps))
        return both
