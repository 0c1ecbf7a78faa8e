"""int8 products of float32 inputs: weights int8 per output channel (symmetric), each product's
input quantized per call with a scale and zero point of its own (dynamic quantization), int32
accumulation, float32 results. Two kernel libraries compute the same integers (one quantized
weight, the input quantized with fbgemm's own scale and zero point): fbgemm
(`quantized::linear_dynamic`, every x86 CPU) and oneDNN (`onednn::qlinear_pointwise`, with VNNI
or AMX: AMX's int8 tiles are oneDNN's only); `elmo_bilm.model.routes` times both on the machine
and picks one per product shape.
"""

from typing import Any, Optional, cast

import torch

# Without VNNI, fbgemm's u8 x s8 products sum pairs into int16 and can saturate: inputs then
# get 7 bits (what torch.ao's dynamic quantization does everywhere on x86).
REDUCE_RANGE = not torch.cpu._is_vnni_supported()
# oneDNN's int8 route runs here: its quantized linear exists and the CPU has VNNI or AMX (without
# them its u8 x s8 pairs saturate as fbgemm's do)
ONEDNN = (
    torch.backends.mkldnn.is_available()
    and hasattr(torch.ops.onednn, "qlinear_pointwise")
    and (torch.cpu._is_vnni_supported() or torch.cpu._is_amx_tile_supported())
)
ROUTES = ("fbgemm", "onednn")


class OneDnnPack:
    """oneDNN's packed int8 weight: the quantized weight (out, in) (as fbgemm's pack holds it),
    its per-channel scales and the bias (float32)."""

    def __init__(self, quantized: torch.Tensor, bias: Optional[torch.Tensor], rows: int) -> None:
        self.out_features, in_features = quantized.shape
        self.weight = torch.ops.onednn.qlinear_prepack(
            quantized.int_repr(), [max(rows, 1), in_features]
        )
        self.scale = quantized.q_per_channel_scales().float()
        self.zero_point = torch.zeros(self.out_features, dtype=torch.long)
        self.bias = bias


def pack(
    weight: torch.Tensor, bias: Optional[torch.Tensor], route: str = "fbgemm", rows: int = 1024
) -> Any:
    """`weight` (out, in) quantized per output channel (symmetric, the same integers for both
    routes) for `route` (`rows`: the row count oneDNN packs for), with `bias` added by the
    product."""
    if route not in ROUTES:
        raise ValueError(f"no int8 route {route!r}: one of {ROUTES}")
    weight = weight.detach().float().contiguous()
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    bias = None if bias is None else bias.detach().float().contiguous()
    zero_point = torch.zeros(weight.shape[0], dtype=torch.long)
    quantized = torch.quantize_per_channel(weight, scale.double(), zero_point, 0, torch.qint8)
    if route == "onednn":
        return OneDnnPack(quantized, bias, rows)
    return torch.ops.quantized.linear_prepack(quantized, bias)


def linear(x: torch.Tensor, packed: Any) -> torch.Tensor:
    """`x @ W.T + b` for float32 `x` (rows, in), quantized per call (one scale per tensor, as
    fbgemm chooses it) and multiplied on the pack's route."""
    if x.device.type != "cpu":  # a biLM moved after `set_precision(bilm, "int8")`
        raise RuntimeError(
            f"precision 'int8' runs on the CPU, the biLM is on {x.device}: set another "
            "precision (set_precision) before moving it"
        )
    if x.dtype != torch.float32:  # a biLM cast (`.double()`, `.half()`) after `set_precision`
        raise RuntimeError(
            f"precision 'int8' computes from float32 inputs, this biLM runs in {x.dtype} "
            "(cast after set_precision?): cast it back with .float(), or call "
            "set_precision(bilm, 'float32') before casting it"
        )
    if not bool(torch.isfinite(x).all()):
        # one scale for the whole input: an inf or NaN would spoil every row (or stop the
        # quantizer with an obscure error), where float32 keeps it to its own row
        raise ValueError(
            "precision 'int8' met a NaN or infinite value in a product's input (one scale per "
            "input would spread it to every row): run this batch in float32 to see where it "
            "comes from"
        )
    if not isinstance(packed, OneDnnPack):
        return cast(torch.Tensor, torch.ops.quantized.linear_dynamic(x, packed, REDUCE_RANGE))
    if x.shape[0] == 0:  # fbgemm gives an empty product; torch's quantizer fails on one
        empty = x.new_zeros((0, packed.out_features))
        return empty if packed.bias is None else empty + packed.bias
    quantized = torch.quantize_per_tensor_dynamic(x.contiguous(), torch.quint8, False)
    out = torch.ops.onednn.qlinear_pointwise(
        quantized.int_repr(),
        quantized.q_scale(),
        quantized.q_zero_point(),
        packed.weight,
        packed.scale,
        packed.zero_point,
        packed.bias,
        1.0,
        0,
        torch.float32,
        "none",
        [],
        "",
    )
    return cast(torch.Tensor, out)
