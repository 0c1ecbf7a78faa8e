"""GRU and LSTM encoders that run over the padded batch, without packing it.

AllenNLP's `gru` and `lstm` encoders pack the batch (`PackedSequence`). On the CPU, torch's packed
RNN takes one slice of the input projections per time step, and the backward pass of each slice
writes a zero tensor the size of all the projections: training time grows with the square of
the sequence length. For SQuAD's passages of up to 400 tokens that is most of a training step
(`python -m elmo_benchmarks.padded_rnn`; its figures in docs/performance.md). AllenNLP's
`alternating_lstm` (He et al.'s SRL encoder) loops over time steps in Python, and it too slices
its whole input, and writes its whole output, once per step. These encoders compute
the same function: the forward direction runs over the padded batch (padding comes after every
position it could change), the backward direction over each sequence reversed within its own
length, and the padded positions of the output are zero.
"""

from typing import Callable, Dict, List, Optional

import torch
from allennlp.modules.augmented_lstm import AugmentedLstm
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
from allennlp.modules.stacked_alternating_lstm import StackedAlternatingLstm
from allennlp.nn.util import get_dropout_mask
from torch.func import functional_call


def _reversal(mask: torch.BoolTensor) -> torch.Tensor:
    """(batch, time, 1) indices that reverse each row of `mask`'s shape within its valid steps
    (each row's valid steps first) and leave its padded steps where they are; the map is its own
    inverse."""
    steps = torch.arange(mask.size(1), device=mask.device).unsqueeze(0)
    reverse = mask.sum(dim=1, keepdim=True) - 1 - steps
    return torch.where(reverse >= 0, reverse, steps).unsqueeze(-1)


def _reorder(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """`tensor` (batch, time, features) with its time steps taken in `_reversal`'s order."""
    return tensor.gather(1, index.expand(-1, -1, tensor.size(-1)))


class PaddedRnnEncoder(Seq2SeqEncoder):
    """A batch-first torch RNN of the subclass's `kind` run one layer and one direction at a time
    on the padded batch; the parameters are the RNN's own, under the names AllenNLP's `gru` and
    `lstm` encoders give them (`_module.weight_ih_l0`, ...), so that weights move between the two
    either way.

    # Parameters

    input_size : `int`
    hidden_size : `int`
        Units per direction.
    num_layers : `int`, optional (default = `1`)
    bias : `bool`, optional (default = `True`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on the output of every layer but the last (training only), as torch's RNNs.
    bidirectional : `bool`, optional (default = `False`)
    """

    kind: Callable[..., torch.nn.RNNBase]
    _module: torch.nn.RNNBase
    _shells: Dict[int, torch.nn.RNNBase]

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(stateful=False)
        self._module = self.kind(
            input_size,
            hidden_size,
            num_layers=num_layers,
            bias=bias,
            dropout=dropout,
            bidirectional=bidirectional,
            batch_first=True,
        )
        # One-layer, one-direction RNNs of the same kind that run with `_module`'s weights
        # (`functional_call`); kept out of the module tree, so that the state dict, `.to()` and
        # the optimizer see `_module`'s parameters only.
        directions = 2 if bidirectional else 1
        sizes = [input_size] + [directions * hidden_size] * (num_layers - 1)
        self.__dict__["_shells"] = {
            size: self.kind(size, hidden_size, bias=bias, batch_first=True, device="meta")
            for size in set(sizes)
        }

    def get_input_dim(self) -> int:
        return self._module.input_size

    def get_output_dim(self) -> int:
        return self._module.hidden_size * (2 if self._module.bidirectional else 1)

    def is_bidirectional(self) -> bool:
        return self._module.bidirectional

    def _run(self, inputs: torch.Tensor, layer: int, suffix: str) -> torch.Tensor:
        """One direction of one layer, forwards over `inputs`, from a zero state."""
        weights: Dict[str, torch.Tensor] = {
            name: getattr(self._module, f"{name}_l{layer}{suffix}")
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            if hasattr(self._module, f"{name}_l{layer}{suffix}")
        }
        shell = self._shells[inputs.size(-1)]
        # Not oneDNN's RNN, which torch picks for an unpacked LSTM on the CPU: a signal arriving
        # while it runs (even one whose handler does nothing) corrupted the heap in 2 of 8 runs
        # (`tests/elmo_plugin/modules/test_padded_rnn.py`); torch's own loop is slower than oneDNN for a long
        # single sequence, still faster than the packed path (`elmo_benchmarks.padded_rnn`). The other
        # flags stay as they are (`None`): setting oneDNN's TF32 flag warns on every call.
        off = torch.backends.mkldnn.flags(
            enabled=False, deterministic=None, allow_tf32=None, fp32_precision=None
        )
        with off:
            outputs = functional_call(
                shell, {f"{name}_l0": w for name, w in weights.items()}, (inputs,)
            )
        return outputs[0]

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        hidden_state: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """`inputs` (batch, time, input_size) and `mask` (batch, time), each row's valid steps
        first; returns (batch, time, output_dim), zero at the padded steps."""
        if hidden_state is not None:
            raise ValueError("PaddedRnnEncoder starts every sequence from a zero state")
        reverse = _reversal(mask)
        output = inputs
        for layer in range(self._module.num_layers):
            if layer > 0:
                output = torch.nn.functional.dropout(output, self._module.dropout, self.training)
            directions: List[torch.Tensor] = [self._run(output, layer, "")]
            if self._module.bidirectional:
                backward = self._run(_reorder(output, reverse), layer, "_reverse")
                directions.append(_reorder(backward, reverse))
            output = torch.cat(directions, dim=-1) if len(directions) > 1 else directions[0]
        return output * mask.unsqueeze(-1)


@Seq2SeqEncoder.register("elmo_plugin_gru")
class PaddedGruEncoder(PaddedRnnEncoder):
    """AllenNLP's `gru` encoder (same parameters, same initialisation, the same function up to
    float32 rounding), several times faster to train on the CPU for long sequences; see the
    module's docstring. Parameters: as `PaddedRnnEncoder`.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_gru".
    """

    kind = torch.nn.GRU


@Seq2SeqEncoder.register("elmo_plugin_lstm")
class PaddedLstmEncoder(PaddedRnnEncoder):
    """AllenNLP's `lstm` encoder (same parameters, same initialisation, the same function up to
    float32 rounding), several times faster to train on the CPU for long sequences; see the
    module's docstring. Parameters: as `PaddedRnnEncoder`.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_lstm".
    """

    kind = torch.nn.LSTM


@Seq2SeqEncoder.register("elmo_plugin_alternating_lstm")
class PaddedAlternatingLstmEncoder(Seq2SeqEncoder):
    """AllenNLP's `alternating_lstm` (He et al. 2017's interleaved LSTM with highway connections and
    recurrent dropout; the layers alternate direction) over the padded batch: the same parameters
    under the same names (`_module.layer_0.cell.input_linearity.weight`, ...), the same
    initialisation, and in evaluation the same function up to float32 rounding. Each layer runs
    AllenNLP's own cell once per time step on the whole batch, reading the step from one `unbind`
    of the input and stacking the outputs once, where AllenNLP's slices the input and writes the
    output once per step (whose backward pass copies the whole tensor each step); a backward layer
    runs on each sequence reversed within its length. In training, each layer draws its recurrent
    dropout mask as AllenNLP's does, for the batch in its given order (AllenNLP's: sorted by
    length), so the masks match in distribution, not row for row.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_alternating_lstm".

    # Parameters

    input_size : `int`
    hidden_size : `int`
    num_layers : `int`
        Layers, the first forwards, then alternating.
    recurrent_dropout_probability : `float`, optional (default = `0.0`)
        Variational dropout on each layer's hidden state, one mask per sequence.
    use_highway : `bool`, optional (default = `True`)
    use_input_projection_bias : `bool`, optional (default = `True`)
    """

    _module: StackedAlternatingLstm

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        recurrent_dropout_probability: float = 0.0,
        use_highway: bool = True,
        use_input_projection_bias: bool = True,
    ) -> None:
        super().__init__(stateful=False)
        self._module = StackedAlternatingLstm(
            input_size,
            hidden_size,
            num_layers,
            recurrent_dropout_probability=recurrent_dropout_probability,
            use_highway=use_highway,
            use_input_projection_bias=use_input_projection_bias,
        )

    def get_input_dim(self) -> int:
        return self._module.input_size

    def get_output_dim(self) -> int:
        return self._module.hidden_size

    def is_bidirectional(self) -> bool:
        return False

    @staticmethod
    def _run(layer: AugmentedLstm, inputs: torch.Tensor) -> torch.Tensor:
        """One layer forwards over `inputs` (batch, time, features) from a zero state."""
        state = memory = inputs.new_zeros(inputs.size(0), layer.lstm_dim)
        dropout = layer.recurrent_dropout_probability
        mask = get_dropout_mask(dropout, memory) if dropout > 0.0 else None
        outputs = []
        for step in inputs.unbind(1):
            state, memory = layer.cell(step, (state, memory), mask)
            outputs.append(state)
        return torch.stack(outputs, dim=1)

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        hidden_state: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """`inputs` (batch, time, input_size) and `mask` (batch, time), each row's valid steps
        first; returns (batch, time, hidden_size), zero at the padded steps."""
        if hidden_state is not None:
            raise ValueError("PaddedAlternatingLstmEncoder starts every sequence from a zero state")
        reverse = _reversal(mask)
        output = inputs
        for layer in self._module.lstm_layers:
            if layer.go_forward:
                output = self._run(layer, output)
            else:
                output = _reorder(self._run(layer, _reorder(output, reverse)), reverse)
        return output * mask.unsqueeze(-1)
