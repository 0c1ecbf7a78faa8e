"""ELMo's Eq. (1) with the `lambda * ||w||^2` regulariser of Sec. 3.2."""

from typing import List, Optional

import torch

from elmo_bilm.model.scalar_mix import ScalarMix
from elmo_bilm.utils.checks import finite_number


class ElmoScalarMix(ScalarMix):
    """`gamma * sum_j softmax(w)_j * h_j`, optionally layer-normalising each `h_j` (masked).

    Extends the core's `ScalarMix` (AllenNLP's parameters and arithmetic) with the L2 penalty on
    the raw weights `w` that the paper adds to the task loss; `regularization_penalty()` returns
    it and the plugin adds it to every AllenNLP model's regularisation penalty (see
    `elmo_plugin.modules.regularization`), so the Trainer puts it into the training loss.

    # Parameters

    mixture_size : `int`
        Number of biLM layers mixed.
    do_layer_norm : `bool`, optional (default = `False`)
    l2_coefficient : `float`, optional (default = `0.0`)
        The paper's `lambda`.
    initial_scalar_parameters : `List[float]`, optional
        Starting raw weights `w` (before the softmax); zeros (equal weights) by default.
    trainable : `bool`, optional (default = `True`)
        Train `w`; `False` keeps `initial_scalar_parameters` (e.g. `[1, 0, 0]`).
    trainable_gamma : `bool`, optional (default = `True`)
        Train `gamma`; `False` fixes it at 1 (Supplement A.2's "no gamma").
    layer : `int`, optional
        This layer alone (`-1`: the top; `w` then unused and not penalised), as `ScalarMix`.
    """

    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        l2_coefficient: float = 0.0,
        initial_scalar_parameters: Optional[List[float]] = None,
        trainable: bool = True,
        trainable_gamma: bool = True,
        layer: Optional[int] = None,
    ) -> None:
        super().__init__(
            mixture_size,
            do_layer_norm=do_layer_norm,
            initial_scalar_parameters=initial_scalar_parameters,
            trainable=trainable,
            trainable_gamma=trainable_gamma,
            layer=layer,
        )
        # the core's check (a UsageError, a ValueError): NaN and infinity refused too
        self.l2_coefficient = finite_number(l2_coefficient, "l2_coefficient (lambda)", minimum=0)

    def raw_weights(self) -> torch.Tensor:
        """The raw mixing weights `w`, `(mixture_size,)`."""
        return torch.cat([parameter.view(1) for parameter in self.scalar_parameters])

    def normalized_weights(self) -> torch.Tensor:
        """`softmax(w)` (one-hot on `layer` when given): the weight each layer gets."""
        return self.weights()

    @property
    def penalized(self) -> bool:
        """Whether the penalty applies: `lambda > 0` and trainable weights."""
        return bool(self.l2_coefficient) and self.scalar_parameters[0].requires_grad

    def regularization_penalty(self) -> torch.Tensor:
        """`lambda * ||w||^2` (zero when not `penalized`)."""
        weights = self.raw_weights()
        if not self.penalized:
            return weights.new_zeros(())
        return self.l2_coefficient * (weights**2).sum()
