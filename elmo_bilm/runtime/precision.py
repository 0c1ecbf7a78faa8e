"""Inference precisions for a loaded biLM: `set_precision(bilm, "float32" | "bfloat16" | "int8")`.

- `"float32"`: the default, today's arithmetic bit for bit.
- `"bfloat16"`: every matrix product and convolution with bfloat16 operands and float32
  accumulation (oneDNN's kernels on a CPU with AVX-512 BF16 or AMX); the products' results, the
  LSTM's cell state, gates, clipping and the residual connections stay float32.
- `"int8"`: dynamic quantization (weights int8 per output channel, each product's input int8
  with a scale of its own, int32 accumulation: `elmo_bilm.model.int8`, on fbgemm or oneDNN as
  timed on the machine, `elmo_bilm.model.routes`) of the large
  products: the LSTM's input-to-gate products, recurrent products and projections, and the char
  CNN's highway layers and projection; the char CNN's convolutions stay float32.

Weights are never changed: the low-precision copies are derived on first use and rebuilt when a
weight's values change, whichever way (`elmo_bilm.model.derived.WeightStamp`: an optimiser step,
`load_state_dict`, an edit through `.data`), so loading, exporting and training see the float32
parameters. The settings are for inference: a pass that needs gradients runs in float32.
docs/performance.md has the measurements behind these choices (which products, which state
precision, torchao against fbgemm) and the errors they give.
"""

import argparse
import warnings
from typing import Any, Callable, List, Optional, Sequence, cast

import torch
from torch import nn

from elmo_bilm.model import int8, onednn, routes
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.derived import DerivedCopies
from elmo_bilm.model.lstm import ProjectedLstmStack
from elmo_bilm.model.onednn import Step
from elmo_bilm.utils.files import UsageError

PRECISIONS = ("float32", "bfloat16", "int8")
# the LSTM's recurrent product under "int8" (see docs/performance.md)
INT8_RECURRENT = "int8"


def missing_bfloat16_instructions() -> Optional[str]:
    """The instruction set a CPU lacks for native bfloat16 products, or None when it has them.

    torch's own dispatch decides what runs: `torch.backends.cpu.get_cpu_capability()` (which
    `ATEN_CPU_CAPABILITY=avx2` lowers) must be AVX-512 and the CPU must have AVX-512 BF16 or AMX
    tiles; otherwise oneDNN emulates bfloat16 with float32 arithmetic and conversions, slower
    than float32 itself."""
    capability = torch.backends.cpu.get_cpu_capability()
    if not capability.startswith("AVX512"):
        return f"AVX-512 BF16 (torch's CPU capability is {capability})"
    if not (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()):
        return "AVX-512 BF16 (nor AMX)"
    return None


def set_precision(bilm: BiLm, precision: str = "float32") -> BiLm:
    """Prepare `bilm` (loaded, any device) to run its inference in `precision`, one of
    `PRECISIONS`; returns it. `"bfloat16"` on a CPU without AVX-512 BF16 or AMX falls back to
    float32 with a warning naming the missing instructions (emulated bfloat16 is slower than
    float32). `"float32"` undoes another setting. Call it where the biLM will run: `"int8"` is
    for the CPU only."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    device = next(bilm.parameters()).device
    if precision == "int8" and device.type != "cpu":
        raise UsageError(f"precision 'int8' runs on the CPU, the biLM is on {device}")
    if precision == "bfloat16" and device.type == "cpu":
        missing = missing_bfloat16_instructions()
        if missing is not None:
            warnings.warn(
                f"precision 'bfloat16' needs {missing}: running the biLM in float32", stacklevel=2
            )
            precision = "float32"
    return _prepare(bilm, precision, INT8_RECURRENT if precision == "int8" else precision)


def add_precision_argument(parser: argparse.ArgumentParser) -> None:
    """`--precision` of the commands that run the biLM (`elmo-embed`, `elmo-embed-corpus`)."""
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="the biLM's arithmetic: float32 (the default, exact), bfloat16 (products in "
        "bfloat16 where the CPU has AVX-512 BF16 or AMX, else float32 with a warning) or int8 "
        "(dynamically quantized products); see docs/performance.md for speed and error",
    )


def _prepare(
    bilm: BiLm, precision: str, recurrent: str, cell_dtype: torch.dtype = torch.float32
) -> BiLm:
    """`set_precision` without the CPU check, with the LSTM's recurrent product in `recurrent`
    (one of `PRECISIONS`) and in bfloat16 its cell state in `cell_dtype` (the benchmark measures
    the combinations)."""
    products = bilm.lstm.products
    if precision == "float32":
        bilm.lstm.products = None
    elif not (
        isinstance(products, LstmProducts)
        and (products.precision, products.recurrent) == (precision, recurrent)
        and products.cell_dtype == (cell_dtype if precision == "bfloat16" else None)
    ):
        bilm.lstm.products = LstmProducts(precision, recurrent, cell_dtype)
    cnn = bilm.char_cnn
    for highway in cnn.highway_layers():
        highway.transform = _linear(highway.transform, precision)
        highway.carry = _linear(highway.carry, precision)
    cnn.projection = _linear(cnn.projection, precision)
    cnn.convolutions = nn.ModuleList(
        _conv(conv, "bfloat16" if precision == "bfloat16" else "float32")
        for conv in cnn.conv_layers()
    )
    cnn.precision = precision  # part of the word cache's key: no vector crosses precisions
    return bilm


def _packs_bf16(device: torch.device) -> bool:
    """Whether oneDNN's packed bfloat16 products run here (it refuses without AVX-512)."""
    return (
        device.type == "cpu" and onednn.AVAILABLE and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )


class Bf16Weight:
    """A bfloat16 copy of a weight (out, in), packed by oneDNN where it can: products with
    bfloat16 operands and float32 accumulation, whose results are rounded to bfloat16."""

    def __init__(self, weight: torch.Tensor, batch_hint: int) -> None:
        self.packed = _packs_bf16(weight.device)
        self.weight = weight.detach().to(torch.bfloat16).contiguous()
        if self.packed:
            self.weight = torch.ops.mkldnn._reorder_linear_weight(self.weight, batch_hint)

    def linear(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        """`x @ W.T + bias` in bfloat16 (`bias` bfloat16 too)."""
        x = x.bfloat16()
        if self.packed:
            out = torch.ops.mkldnn._linear_pointwise(x, self.weight, bias, "none", [], "")
            return cast(torch.Tensor, out)
        return nn.functional.linear(x, self.weight, bias)

    def linear_add(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        """`other + x @ W.T` in bfloat16 (`other` bfloat16: the addition fused in the product)."""
        x = x.bfloat16()
        if self.packed:
            return cast(
                torch.Tensor,
                torch.ops.mkldnn._linear_pointwise.binary(x, other, self.weight, None, "add"),
            )
        return torch.addmm(other, x, self.weight.T)


class LstmProducts:
    """The LSTM stack's products in a precision (`ProjectedLstmStack.products`), one per
    direction: the input-to-gate products and projections in `precision`, the recurrent product
    in `recurrent`.

    In bfloat16 the gates and the outputs `h` are bfloat16 (each a product's result plus at most
    one bfloat16 addition) and the cell state is `cell_dtype`; in int8 (the products' results are
    float32) everything between the products is float32."""

    def __init__(
        self, precision: str, recurrent: str, cell_dtype: torch.dtype = torch.float32
    ) -> None:
        self.precision, self.recurrent = precision, recurrent
        self.cell_dtype = cell_dtype if precision == "bfloat16" else None
        self.derived = DerivedCopies()

    def _weight(
        self, precision: str, name: str, layer: int, direction: int, weight: torch.Tensor, rows: int
    ) -> Any:
        """`weight` (out, in) prepared for `precision`: an int8 pack, a `Bf16Weight` or for
        float32 a oneDNN pack (None off the CPU: plain products)."""
        key = (name, layer, direction, precision)
        if precision == "int8":
            route = routes.route("int8", weight.shape[1], weight.shape[0], rows)
            return self.derived.get(
                (*key, route), [weight], lambda: int8.pack(weight, None, route, rows)
            )
        if precision == "bfloat16":
            return self.derived.get(key, [weight], lambda: Bf16Weight(weight, rows))
        if weight.device.type != "cpu" or not onednn.AVAILABLE:
            return None
        return self.derived.get(
            key,
            [weight],
            lambda: torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), rows),
        )

    def input_linears(
        self,
        stack: ProjectedLstmStack,
        layer: int,
        bias: torch.Tensor,
        directions: Sequence[int] = (0, 1),
    ) -> List[Callable[[torch.Tensor], torch.Tensor]]:
        """One `x (N, in) -> x W + b (N, 4 dim)` per direction of `directions`, its weight
        prepared now (bfloat16 results in bfloat16, else float32)."""
        weight, rows = stack.input_weights[layer], onednn.INPUT_BATCH_HINT
        if self.precision == "bfloat16":
            weights = [
                self._weight("bfloat16", "input", layer, d, weight[d].T, rows) for d in directions
            ]
            return [
                lambda x, w=w, b=bias[d, 0].bfloat16(): w.linear(x, b)  # type: ignore[misc]
                for d, w in zip(directions, weights)
            ]
        # int8: the bias goes into the pack (its product adds it), the forget gate's
        # constant too: a source, so that an edit of that buffer remakes the pack
        rows = stack._block_rows
        route = routes.route("int8", weight.shape[1], weight.shape[2], rows)
        packs = [
            self.derived.get(
                ("input", layer, d, "int8", route),
                [weight[d], stack.biases[layer][d], cast(torch.Tensor, stack.forget_bias)],
                lambda: int8.pack(weight[d].T, bias[d, 0], route, rows),  # noqa: B023 (called at once)
            )
            for d in directions
        ]
        return [lambda x, pack=pack: int8.linear(x, pack) for pack in packs]  # type: ignore[misc]

    def step_products(
        self,
        stack: ProjectedLstmStack,
        layer: int,
        batch_size: int,
        directions: Sequence[int] = (0, 1),
    ) -> List[Step]:
        """One `(gate_inputs_t, h) -> gates`, `m -> P m` pair per direction of `directions`."""
        w_h, w_p = stack.recurrent_weights[layer], stack.projections[layer]

        def direction(d: int) -> Step:
            w_r = self._weight(self.recurrent, "recurrent", layer, d, w_h[d].T, batch_size)
            w_o = self._weight(self.precision, "projection", layer, d, w_p[d], batch_size)
            gates: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
            if self.recurrent == "bfloat16" and self.precision == "bfloat16":
                gates = lambda inputs_t, h: w_r.linear_add(h, inputs_t)  # noqa: E731
            elif self.recurrent == "bfloat16":
                gates = lambda inputs_t, h: inputs_t + w_r.linear(h).float()  # noqa: E731
            elif self.recurrent == "int8":
                gates = lambda inputs_t, h: inputs_t + int8.linear(h.float(), w_r)  # noqa: E731
            elif w_r is None:
                gates = lambda inputs_t, h: torch.addmm(inputs_t, h.float(), w_h[d])  # noqa: E731
            else:
                linear = torch.ops.mkldnn._linear_pointwise
                gates = lambda inputs_t, h: linear.binary(  # noqa: E731
                    h.float(), inputs_t.float(), w_r, None, "add"
                )
            if self.precision == "bfloat16":
                return gates, lambda m: w_o.linear(m)
            return gates, lambda m: int8.linear(m, w_o)

        return [direction(d) for d in directions]


class PrecisionLinear(nn.Linear):
    """An `nn.Linear` that shares another's parameters and computes in `precision`."""

    def __init__(self, linear: nn.Linear, precision: str) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.precision = precision
        self.derived = DerivedCopies()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            return super().forward(x)
        sources = [self.weight] + ([self.bias] if self.bias is not None else [])
        if self.precision == "int8":
            route = routes.route("int8", self.in_features, self.out_features, x.shape[0])
            packed = self.derived.get(
                ("int8", route), sources, lambda: int8.pack(self.weight, self.bias, route)
            )
            return int8.linear(x, packed)
        w16 = self.derived.get(("bf16",), sources, lambda: Bf16Weight(self.weight, 1024))
        out = w16.linear(x).float()
        return out if self.bias is None else out + self.bias


class PrecisionConv1d(nn.Conv1d):
    """An `nn.Conv1d` that shares another's parameters and convolves in bfloat16 (float32
    accumulation, the result rounded to bfloat16: the max-pool commutes with that rounding)."""

    def __init__(self, conv: nn.Conv1d) -> None:
        nn.Module.__init__(self)
        for name in nn.Conv1d.__constants__:
            setattr(self, name, getattr(conv, name))
        self._reversed_padding_repeated_twice = conv._reversed_padding_repeated_twice
        self.weight, self.bias = conv.weight, conv.bias
        self.derived = DerivedCopies()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            return super().forward(x)
        sources = [self.weight] + ([self.bias] if self.bias is not None else [])
        weight, bias = self.derived.get(
            ("bf16",),
            sources,
            lambda: [None if p is None else p.to(torch.bfloat16) for p in (self.weight, self.bias)],
        )
        return self._conv_forward(x.bfloat16(), weight, bias)


def _linear(layer: nn.Linear, precision: str) -> nn.Linear:
    """`layer`'s parameters in a module computing in `precision`."""
    if precision == "float32":
        if type(layer) is nn.Linear:
            return layer
        plain = nn.Linear(layer.in_features, layer.out_features, device="meta")
        plain.weight, plain.bias = layer.weight, layer.bias
        return plain
    if isinstance(layer, PrecisionLinear) and layer.precision == precision:
        return layer
    return PrecisionLinear(layer, precision)


def _conv(conv: nn.Conv1d, precision: str) -> nn.Conv1d:
    """`conv`'s parameters in a module computing in `precision` (float32 or bfloat16)."""
    if precision == "float32":
        if type(conv) is nn.Conv1d:
            return conv
        plain = nn.Conv1d(conv.in_channels, conv.out_channels, 1, device="meta")
        for name in nn.Conv1d.__constants__:  # kernel size, stride, padding, ...
            setattr(plain, name, getattr(conv, name))
        plain._reversed_padding_repeated_twice = conv._reversed_padding_repeated_twice
        plain.weight, plain.bias = conv.weight, conv.bias
        return plain
    return conv if isinstance(conv, PrecisionConv1d) else PrecisionConv1d(conv)
