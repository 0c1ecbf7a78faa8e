"""biLSTM layers of different widths with variational dropout on each layer's input (A.7)."""

from typing import List

import torch
from allennlp.modules.input_variational_dropout import InputVariationalDropout
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from elmo_plugin.modules.seq2seq_encoders.padded_rnn import PaddedLstmEncoder


@Seq2SeqEncoder.register("elmo_plugin_stacked_bilstm")
class StackedBiLstmEncoder(Seq2SeqEncoder):
    """A stack of biLSTMs whose widths may differ from layer to layer, each layer's input passed
    through variational dropout (one mask per sequence, shared over time steps).

    The paper's NER tagger (Supplement A.7) needs it: "two biLSTM layers, the first with 200
    hidden units and the second with 100 ... variational dropout is added to the input of both
    biLSTM layers". AllenNLP's `lstm` encoder has one width for all layers and plain dropout
    between them only. Each layer is an `elmo_plugin_lstm` (torch's fused LSTM on the padded batch;
    its parameters have the names of AllenNLP's `LstmSeq2SeqEncoder`).

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_stacked_bilstm".

    # Parameters

    input_size : `int`
    hidden_sizes : `List[int]`
        Hidden units per direction of each layer, lowest first.
    dropout : `float`, optional (default = `0.0`)
        Variational dropout probability on the input of every layer.
    """

    def __init__(self, input_size: int, hidden_sizes: List[int], dropout: float = 0.0) -> None:
        super().__init__()
        if not hidden_sizes:
            raise ValueError("elmo_plugin_stacked_bilstm needs at least one layer in hidden_sizes")
        self.input_size = input_size
        self.output_size = 2 * hidden_sizes[-1]
        self.dropout = InputVariationalDropout(dropout)
        in_sizes = [input_size] + [2 * size for size in hidden_sizes[:-1]]
        self.layers = torch.nn.ModuleList(
            PaddedLstmEncoder(in_size, size, bidirectional=True)
            for in_size, size in zip(in_sizes, hidden_sizes)
        )

    def get_input_dim(self) -> int:
        return self.input_size

    def get_output_dim(self) -> int:
        return self.output_size

    def is_bidirectional(self) -> bool:
        return True

    def forward(self, inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        output = inputs
        for layer in self.layers:
            output = layer(self.dropout(output), mask)
        return output
