"""AllenNLP's `allennlp.modules.elmo_lstm.ElmoLstm`, without AllenNLP: the biLM's stateful
bidirectional LSTM stack with projections and residual connections, run by the project's one
LSTM engine (`elmo_bilm.model.lstm.ProjectedLstmStack`).

    from elmo_bilm.elmo_lstm import ElmoLstm  # was: from allennlp.modules.elmo_lstm ...
"""

from typing import Optional, Tuple

import h5py
import torch
from torch import nn

from elmo_bilm.formats.bilm_tf import check_hdf5_storage, copy_lstm_weights
from elmo_bilm.model.lstm import ProjectedLstmStack
from elmo_bilm.utils.files import FormatError, UsageError


class ElmoLstm(nn.Module):
    """AllenNLP's `ElmoLstm`: `forward(inputs, mask)` -> `(num_layers, batch, T, 2 *
    hidden_size)`, forward and backward outputs side by side, zero at padding. Stateful, as
    AllenNLP's (its only mode): row `i` of a batch starts from the states row `i` of the batch
    before ended with; `reset_states()` forgets them, `_states` reads them (AllenNLP's layout).

    # Parameters

    input_size, hidden_size, cell_size, num_layers : `int`
        AllenNLP's: the input width, each direction's projected output, the memory cells of a
        layer, the layers. Every layer but the first has a residual connection, as AllenNLP's.
    requires_grad : `bool`, optional (default = `False`)
    recurrent_dropout_probability : `float`, optional (default = `0.0`)
        Only 0 (what AllenNLP's ELMo biLMs use): the engine has no recurrent dropout, and a
        non-zero value is a one-line `UsageError` rather than silently ignored.
    memory_cell_clip_value, state_projection_clip_value : `float`, optional
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        cell_size: int,
        num_layers: int,
        requires_grad: bool = False,
        recurrent_dropout_probability: float = 0.0,
        memory_cell_clip_value: Optional[float] = None,
        state_projection_clip_value: Optional[float] = None,
    ) -> None:
        super().__init__()
        if recurrent_dropout_probability:
            raise UsageError(
                f"ElmoLstm: recurrent_dropout_probability={recurrent_dropout_probability} is not "
                "supported (only 0, as in AllenNLP's pretrained biLMs)"
            )
        stack = ProjectedLstmStack(
            input_dim=input_size,
            dim=cell_size,
            projection_dim=hidden_size,
            n_layers=num_layers,
            cell_clip=memory_cell_clip_value,
            proj_clip=state_projection_clip_value,
            use_skip_connections=True,
        )
        self._setup(stack, requires_grad)
        for parameter in stack.parameters():
            parameter.requires_grad_(requires_grad)

    def _setup(self, stack: ProjectedLstmStack, requires_grad: bool) -> None:
        self.stack = stack
        self.stack.stateful = True
        self.requires_grad = requires_grad
        self.input_size = stack.input_weights[0].shape[1]
        self.hidden_size = stack.projection_dim
        self.cell_size = stack.dim
        self.num_layers = stack.n_layers

    @classmethod
    def around(cls, stack: ProjectedLstmStack, requires_grad: bool = False) -> "ElmoLstm":
        """An `ElmoLstm` over a stack already in a biLM (its parameters shared, not copied):
        `_ElmoBiLm._elmo_lstm`. The stack is made stateful."""
        lstm = cls.__new__(cls)
        nn.Module.__init__(lstm)
        lstm._setup(stack, requires_grad)
        return lstm

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`inputs` `(batch, T, input_size)`, `mask` `(batch, T)` -> `(num_layers, batch, T,
        2 * hidden_size)`."""
        return torch.stack(self.stack(inputs, mask.bool()))

    def reset_states(self, mask: Optional[torch.Tensor] = None) -> None:
        """Forget the carried states, of every row or (`mask` `(rows,)`, true = reset) of some."""
        self.stack.reset_states(mask)

    @property
    def _states(self) -> Tuple[torch.Tensor, ...]:
        """The carried `(h, c)`, each `(num_layers, rows, 2 * width)` as AllenNLP lays them out,
        or `()` before the first batch."""
        return self.stack.states

    def load_weights(self, weight_file: str) -> None:
        """Read the LSTM of a bilm-tf weight file (AllenNLP's `load_weights`), every dataset's
        presence and shape checked; the character CNN's datasets are not read."""
        try:
            with h5py.File(weight_file, "r") as weights, torch.no_grad():
                check_hdf5_storage(weights, weight_file)
                copy_lstm_weights(self.stack, weights, weight_file)
        except OSError as error:
            raise FormatError(f"{weight_file}: cannot read the HDF5 weights ({error})") from error
