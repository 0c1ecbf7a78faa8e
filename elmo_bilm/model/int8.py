"""int8 products of float32 inputs: weights int8 per output channel (symmetric), each product's
input quantized per call with a scale and zero point of its own (dynamic quantization), int32
accumulation, float32 results. Two kernel libraries compute the same integers: fbgemm
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
    """oneDNN's packed int8 weight (out, in), its per-channel scales and the bias (float32)."""

    def __init__(
        self, weight: torch.Tensor, scale: torch.Tensor, bias: Optional[torch.Tensor], rows: int
    ) -> None:
        quantized = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8)
        self.weight = torch.ops.onednn.qlinear_prepack(quantized, [max(rows, 1), weight.shape[1]])
        self.scale = scale.float()
        self.zero_point = torch.zeros(weight.shape[0], dtype=torch.long)
        self.bias = bias


def pack(
    weight: torch.Tensor, bias: Optional[torch.Tensor], route: str = "fbgemm", rows: int = 1024
) -> Any:
    """`weight` (out, in) quantized per output channel for `route` (`rows`: the row count oneDNN
    packs for), with `bias` added by the product."""
    weight = weight.detach().float().contiguous()
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    bias = None if bias is None else bias.detach().float().contiguous()
    if route == "onednn":
        return OneDnnPack(weight, scale, bias, rows)
    if route != "fbgemm":
        raise ValueError(f"no int8 route {route!r}: one of {ROUTES}")
    zero_point = torch.zeros(weight.shape[0], dtype=torch.long)
    qweight = torch.quantize_per_channel(weight, scale.double(), zero_point, 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(qweight, bias)


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
    if not isinstance(packed, OneDnnPack):
        return cast(torch.Tensor, torch.ops.quantized.linear_dynamic(x, packed, REDUCE_RANGE))
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
