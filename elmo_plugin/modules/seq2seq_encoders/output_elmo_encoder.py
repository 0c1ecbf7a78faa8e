"""The encoder half of ELMo at the output: `h_k -> [h_k; ELMo_out]`."""

import torch
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder


@Seq2SeqEncoder.register("elmo_plugin_output_elmo")
class OutputElmoEncoder(Seq2SeqEncoder):
    """Wraps a task encoder for ELMo at its output (Sec. 3.3): the `ELMo_out` input columns (the
    last `elmo_dim` of the `elmo_plugin_placement` output with placement "output" or "both")
    bypass `encoder` and are concatenated to its output. A model that appends its own features
    after the embedded text (SRL's predicate indicator) names their width in `trailing_dim`; they
    go to the encoder with the rest.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_output_elmo".

    # Parameters

    encoder : `Seq2SeqEncoder`
        The task's contextual encoder, seeing `[x_k]` or `[x_k; ELMo_in]`.
    elmo_dim : `int`
        Width of the ELMo vectors (2 * the biLM's projection_dim).
    trailing_dim : `int`, optional (default = `0`)
        Width of the model's own features that follow the ELMo columns in the input.
    """

    def __init__(self, encoder: Seq2SeqEncoder, elmo_dim: int, trailing_dim: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.elmo_dim = elmo_dim
        self.trailing_dim = trailing_dim

    def get_input_dim(self) -> int:
        return self.encoder.get_input_dim() + self.elmo_dim

    def get_output_dim(self) -> int:
        return self.encoder.get_output_dim() + self.elmo_dim

    def is_bidirectional(self) -> bool:
        return self.encoder.is_bidirectional()

    def forward(self, inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        if inputs.shape[-1] != self.get_input_dim():
            raise ValueError(
                f"elmo_plugin_output_elmo expects {self.get_input_dim()} input features "
                f"({self.encoder.get_input_dim()} + ELMo {self.elmo_dim}), got {inputs.shape[-1]}"
            )
        end = inputs.shape[-1] - self.trailing_dim
        start = end - self.elmo_dim
        encoded = self.encoder(torch.cat([inputs[..., :start], inputs[..., end:]], dim=-1), mask)
        return torch.cat([encoded, inputs[..., start:end] * mask[..., None]], dim=-1)
