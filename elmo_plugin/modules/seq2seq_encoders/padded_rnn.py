"""GRU and LSTM encoders that run torch's fused RNN over the padded batch, without packing it.

AllenNLP's `gru` and `lstm` encoders pack the batch (`PackedSequence`). On the CPU, torch's packed
RNN takes one slice of the input projections per time step, and the backward pass of each slice
writes a zero tensor the size of all the projections: training time grows with the square of
the sequence length. For SQuAD's passages of up to 400 tokens that is most of a training step
(`python -m benchmarks.padded_rnn`: 4.4x on a batch of 45 x 400 tokens). These encoders compute
the same function: the forward direction runs over the padded batch (padding comes after every
position it could change), the backward direction over each sequence reversed within its own
length, and the padded positions of the output are zero.
"""

from typing import Callable, Dict, List, Optional, cast

import torch
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
from torch.func import functional_call


class PaddedRnnEncoder(Seq2SeqEncoder):
    """A batch-first `torch.nn.GRU` or `torch.nn.LSTM` run one layer and one direction at a time on
    the padded batch; the parameters are the module's own, under the names AllenNLP's `gru` and
    `lstm` encoders give them (`_module.weight_ih_l0`, ...), so that weights move between the two
    either way.

    # Parameters

    module : `torch.nn.RNNBase`
        A `torch.nn.GRU` or `torch.nn.LSTM` with `batch_first=True` and no projection.
    """

    _module: torch.nn.RNNBase
    _shells: Dict[int, torch.nn.RNNBase]

    def __init__(self, module: torch.nn.RNNBase) -> None:
        super().__init__(stateful=False)
        if not module.batch_first:
            raise ValueError("PaddedRnnEncoder needs a batch_first module")
        if getattr(module, "proj_size", 0):
            raise ValueError("PaddedRnnEncoder does not support an LSTM with proj_size")
        self._module = module
        # One-layer, one-direction modules of the same kind that run with this module's weights
        # (`functional_call`); kept out of the module tree, so that the state dict, `.to()` and
        # the optimizer see `_module`'s parameters only.
        directions = 2 if module.bidirectional else 1
        sizes = [module.input_size] + [directions * module.hidden_size] * (module.num_layers - 1)
        make = cast(Callable[..., torch.nn.RNNBase], type(module))
        self.__dict__["_shells"] = {
            size: make(size, module.hidden_size, bias=module.bias, batch_first=True, device="meta")
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
        steps = torch.arange(inputs.size(1), device=inputs.device)
        lengths = mask.sum(dim=1, keepdim=True)
        # position t of each sequence reversed within its length; padding stays where it is
        reverse = lengths - 1 - steps.unsqueeze(0)
        reverse = torch.where(reverse >= 0, reverse, steps.unsqueeze(0)).unsqueeze(-1)
        output = inputs
        for layer in range(self._module.num_layers):
            if layer > 0:
                output = torch.nn.functional.dropout(output, self._module.dropout, self.training)
            directions: List[torch.Tensor] = [self._run(output, layer, "")]
            if self._module.bidirectional:
                flipped = output.gather(1, reverse.expand(-1, -1, output.size(-1)))
                backward = self._run(flipped, layer, "_reverse")
                directions.append(backward.gather(1, reverse.expand(-1, -1, backward.size(-1))))
            output = torch.cat(directions, dim=-1) if len(directions) > 1 else directions[0]
        return output * mask.unsqueeze(-1)


@Seq2SeqEncoder.register("elmo_plugin_gru")
class PaddedGruEncoder(PaddedRnnEncoder):
    """AllenNLP's `gru` encoder (same parameters, same initialisation, the same function up to
    float32 rounding), several times faster to train on the CPU for long sequences; see the
    module's docstring.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_gru".

    # Parameters

    input_size : `int`
    hidden_size : `int`
        Units per direction.
    num_layers : `int`, optional (default = `1`)
    bias : `bool`, optional (default = `True`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on the output of every layer but the last (training only), as `torch.nn.GRU`.
    bidirectional : `bool`, optional (default = `False`)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(
            torch.nn.GRU(
                input_size,
                hidden_size,
                num_layers=num_layers,
                bias=bias,
                dropout=dropout,
                bidirectional=bidirectional,
                batch_first=True,
            )
        )


@Seq2SeqEncoder.register("elmo_plugin_lstm")
class PaddedLstmEncoder(PaddedRnnEncoder):
    """AllenNLP's `lstm` encoder (same parameters, same initialisation, the same function up to
    float32 rounding), several times faster to train on the CPU for long sequences; see the
    module's docstring.

    Registered as a `Seq2SeqEncoder` with name "elmo_plugin_lstm".

    # Parameters

    input_size : `int`
    hidden_size : `int`
        Units per direction.
    num_layers : `int`, optional (default = `1`)
    bias : `bool`, optional (default = `True`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on the output of every layer but the last (training only), as `torch.nn.LSTM`.
    bidirectional : `bool`, optional (default = `False`)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(
            torch.nn.LSTM(
                input_size,
                hidden_size,
                num_layers=num_layers,
                bias=bias,
                dropout=dropout,
                bidirectional=bidirectional,
                batch_first=True,
            )
        )
