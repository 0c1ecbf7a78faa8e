"""The encoder half of ELMo at the output: `h_k -> [h_k; ELMo_out]`."""
import torch
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder


@Seq2SeqEncoder.register("elmo_plugin_output_elmo")
class OutputElmoEncoder(Seq2SeqEncoder):
    """Wraps a task encoder for ELMo at its output (Sec. 3.3): the last `elmo_dim` input columns
    (the `ELMo_out` vectors appended by `elmo_plugin_placement` with placement "output" or "both")
    bypass `encoder` and are concatenated to its output.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_output_elmo".

    # Parameters

    encoder : `Seq2SeqEncoder`
        The task's contextual encoder, seeing `[x_k]` or `[x_k; ELMo_in]`.
    elmo_dim : `int`
        Width of the ELMo vectors (2 * the biLM's projection_dim).
    """

    def __init__(self, encoder: Seq2SeqEncoder, elmo_dim: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.elmo_dim = elmo_dim

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
        encoded = self.encoder(inputs[..., : -self.elmo_dim], mask)
        return torch.cat([encoded, inputs[..., -self.elmo_dim :] * mask[..., None]], dim=-1)
