"""Export of the biLM to ONNX for serving: character ids in, every layer out, batch size and
sentence length dynamic; runs in onnxruntime without torch (`docs/examples/serve_onnx.py`).

`BiLm.forward` is built for speed in PyTorch: it packs sentences by length, trims the character
columns after the longest word and keeps a word cache across batches, with Python-side shapes
that an exported graph cannot hold. The graph exported here computes the same function on padded
tensors: the char CNN over each distinct word of the batch (ONNX `Unique`) and all 50 character
columns, and each LSTM layer as one `torch.while_loop` over the time steps (an ONNX `Loop`) in
which padded positions run but never reach a real one (padding is at the end in both
directions, after `reverse_padded`). The weights are the `BiLm`'s own.
"""

import logging
import os
import warnings
from typing import List, Optional, Tuple

import torch
from torch import nn

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.char_cnn import add_sentence_boundaries
from elmo_bilm.model.lstm import lstm_cell, reverse_padded
from elmo_bilm.utils.errors import install_extra
from elmo_bilm.utils.files import PathLike, UsageError, atomic_output

logger = logging.getLogger(__name__)

INPUT_NAME = "char_ids"
OUTPUT_NAMES = ("layers", "mask")


class ExportableBiLm(nn.Module):
    """`BiLm`'s inference function with data-independent shapes (see the module docstring).

    `forward(char_ids (batch, T, 50) int64)` -> `layers (n_layers + 1, batch, T, 2 * proj)`
    float32, zero at padding, the same layers as `BiLm.forward`'s `activations` stacked, and
    `mask (batch, T)` bool.

    # Parameters

    bilm : `BiLm`
        Its parameters are shared, not copied.
    """

    def __init__(self, bilm: BiLm) -> None:
        super().__init__()
        self.bilm = bilm

    def _recurrence(self, gates_in: torch.Tensor, layer: int) -> torch.Tensor:
        """One layer, both directions: input gates `(2, batch, T2, 4 dim)` -> `(2, batch, T2, proj)`."""
        lstm = self.bilm.lstm
        w_h = lstm.recurrent_weights[layer]
        w_p_t = lstm.projections[layer].transpose(1, 2)
        directions, batch_size, timesteps = gates_in.shape[:3]
        zero_step = torch.zeros((), dtype=torch.long, device=gates_in.device)
        h = gates_in.new_zeros((directions, batch_size, lstm.projection_dim))
        c = gates_in.new_zeros((directions, batch_size, lstm.dim))
        outputs = gates_in.new_zeros((directions, batch_size, timesteps, lstm.projection_dim))

        def running(
            t: torch.Tensor, h: torch.Tensor, c: torch.Tensor, outputs: torch.Tensor
        ) -> torch.Tensor:
            return t < gates_in.shape[2]

        def step(
            t: torch.Tensor, h: torch.Tensor, c: torch.Tensor, outputs: torch.Tensor
        ) -> Tuple[torch.Tensor, ...]:
            at = t.view(1)
            gates = torch.baddbmm(gates_in.index_select(2, at).squeeze(2), h, w_h)
            c, m = lstm_cell(gates, c, lstm.cell_clip)
            h = torch.bmm(m, w_p_t)
            if lstm.proj_clip is not None:
                h = h.clamp(-lstm.proj_clip, lstm.proj_clip)
            return t + 1, h, c, outputs.index_copy(2, at, h.unsqueeze(2))

        return torch.while_loop(running, step, (zero_step, h, c, outputs))[3]

    def forward(self, char_ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        lstm = self.bilm.lstm
        mask = (char_ids > 0).any(-1)
        ids, boundary_mask = add_sentence_boundaries(char_ids, mask)
        batch_size, timesteps, max_chars = ids.shape
        # each distinct word once (an ONNX `Unique`), as `BiLm` does: the char CNN is most of the cost
        # explicit sizes, no -1: a reshape with -1 cannot infer a size over an empty batch
        flat = ids.reshape(batch_size * timesteps, max_chars)
        distinct, index = torch.unique(flat, dim=0, return_inverse=True)
        words = self.bilm.char_cnn.encode_words(distinct, trim=False)[index]
        token = words.view(batch_size, timesteps, lstm.projection_dim) * boundary_mask[..., None]
        lengths = boundary_mask.long().sum(-1)
        x = torch.stack([token, reverse_padded(token, lengths)])  # (2, batch, T2, proj)
        layers: List[torch.Tensor] = [torch.cat([token, token], dim=-1)]
        for layer in range(lstm.n_layers):
            bias = lstm.biases[layer] + lstm.forget_bias
            inputs = x.reshape(2, batch_size * timesteps, lstm.projection_dim)
            gates_in = torch.baddbmm(bias, inputs, lstm.input_weights[layer])
            out = self._recurrence(gates_in.view(2, batch_size, timesteps, 4 * lstm.dim), layer)
            if layer > 0 and lstm.use_skip_connections:
                out = out + x
            layers.append(torch.cat([out[0], reverse_padded(out[1], lengths)], dim=-1))
            x = out
        stacked = torch.stack(layers)[:, :, 1 : char_ids.shape[1] + 1]  # drop <S> and </S>
        return stacked * mask[None, :, :, None], mask


ONNX_EXTRA = ("onnx", "onnxscript")  # what torch's exporter imports: the core's `onnx` extra


def check_onnx_extra() -> None:
    """One line naming the extra when its packages are missing (torch's exporter raised
    `ModuleNotFoundError: onnxscript` from deep inside)."""
    import importlib.util

    missing = [name for name in ONNX_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise ModuleNotFoundError(
            f"exporting to ONNX needs {' and '.join(missing)}, from elmo-bilm's `onnx` extra: "
            f"{install_extra('onnx')}"
        )


QUANTIZE_CHOICES = ("int8",)


def quantize_onnx(model_file: PathLike, output_file: PathLike) -> None:
    """onnxruntime's dynamic int8 quantization of an exported biLM: every `MatMul` (the LSTM's
    products, inside the `Loop` subgraphs too, and the char CNN's highways and projection), int8
    weights with one scale per tensor (onnxruntime's per-channel scales are refused at run time
    by the both-directions batched products), each input quantized per call; the convolutions
    stay float32, as in `elmo_bilm.runtime.precision`'s int8."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        model_file,
        output_file,
        weight_type=QuantType.QInt8,
        per_channel=False,
        op_types_to_quantize=["MatMul", "Gemm"],
        extra_options={"EnableSubgraph": True},
    )


def export_onnx(
    bilm: BiLm, output_file: PathLike, overwrite: bool = False, quantize: Optional[str] = None
) -> None:
    """Write `bilm` as an ONNX model (one self-contained file, opset of torch's exporter) to
    `output_file`, atomically. Input `char_ids` `(batch, tokens, 50)` int64 (`batch_to_ids`),
    outputs `layers` `(n_layers + 1, batch, tokens, 2 * proj)` and `mask` `(batch, tokens)`.
    `quantize="int8"`: its products dynamically quantized (`quantize_onnx`)."""
    if quantize is not None and quantize not in QUANTIZE_CHOICES:
        raise UsageError(f"quantize must be one of {QUANTIZE_CHOICES}, got {quantize!r}")
    if type(bilm).add_boundaries is not BiLm.add_boundaries:
        raise UsageError(
            f"{type(bilm).__name__}: a biLM with its own character vocabulary (ELMoForManyLangs) "
            "cannot be exported to ONNX yet; the export builds bilm-tf's character ids"
        )
    check_onnx_extra()
    module = ExportableBiLm(bilm).eval()
    example = torch.zeros((2, 3, bilm.max_characters_per_token), dtype=torch.long)
    example[:, :2] = 1  # two sentences of 3 and 2 tokens: no shape is specialised to 1
    example[0, 2] = 1
    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens")
    # torch's exporter warns about its own internals (FutureWarning): nothing a user can act on
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        program = torch.onnx.export(
            module,
            (example,),
            dynamo=True,
            external_data=False,
            input_names=[INPUT_NAME],
            output_names=list(OUTPUT_NAMES),
            dynamic_shapes=({0: batch, 1: tokens},),
            verbose=False,
        )
    assert program is not None
    with atomic_output(output_file, overwrite) as partial:
        if quantize is None:
            program.save(partial, external_data=False)
            return
        float_file = f"{partial}.float32"
        try:
            program.save(float_file, external_data=False)
            quantize_onnx(float_file, partial)
        finally:
            if os.path.exists(float_file):
                os.remove(float_file)
