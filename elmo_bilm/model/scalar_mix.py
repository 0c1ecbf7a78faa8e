"""ELMo's Eq. (1): `gamma * sum_j softmax(w)_j * h_j`, optionally layer-normalising each `h_j`."""

from typing import List, Optional, Sequence

import torch
from torch import nn

from elmo_bilm.utils.files import UsageError


class ScalarMix(nn.Module):
    """A trainable scalar mixture of `mixture_size` same-shaped tensors, with AllenNLP's
    `ScalarMix` parameter names (`scalar_parameters.K`, `gamma`) and arithmetic, so that
    state dicts and outputs carry over.

    # Parameters

    mixture_size : `int`
    do_layer_norm : `bool`, optional (default = `False`)
        Standardise each tensor over all its unmasked elements (one mean and variance per tensor
        and batch, as bilm-tf) before mixing; needs the mask.
    initial_scalar_parameters : `Sequence[float]`, optional
        The raw weights `w` to start from (zeros: equal weights); integers are taken as floats,
        as AllenNLP does.
    trainable : `bool`, optional (default = `True`)
        Train `w` (and, unless `trainable_gamma` says otherwise, `gamma`).
    trainable_gamma : `bool`, optional
        Train `gamma`; default: as `trainable`.
    layer : `int`, optional
        Mix this one layer only (`-1`: the top, Table 2's "last only"): `gamma * h_layer`
        exactly, the other tensors unread and `w` neither used nor trained (kept for the state
        dict).
    """

    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        initial_scalar_parameters: Optional[Sequence[float]] = None,
        trainable: bool = True,
        trainable_gamma: Optional[bool] = None,
        layer: Optional[int] = None,
    ) -> None:
        super().__init__()
        if layer is not None and not -mixture_size <= layer < mixture_size:
            raise UsageError(f"layer {layer} of a mix of {mixture_size}")
        try:  # integers too (`[1, 1, 1]`, common in scripts written for AllenNLP): floats here
            given = initial_scalar_parameters
            initial = [float(value) for value in ([0.0] * mixture_size if given is None else given)]
        except (TypeError, ValueError) as error:
            raise UsageError(
                f"initial scalar parameters must be numbers, got {initial_scalar_parameters!r}"
            ) from error
        if len(initial) != mixture_size:
            raise UsageError(f"{len(initial)} initial scalar parameters for {mixture_size} layers")
        self.mixture_size = mixture_size
        self.do_layer_norm = do_layer_norm
        self.layer = layer
        self.scalar_parameters = nn.ParameterList(
            nn.Parameter(torch.tensor([value]), requires_grad=trainable and layer is None)
            for value in initial
        )
        gamma_trainable = trainable if trainable_gamma is None else trainable_gamma
        self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=gamma_trainable)

    def forward(
        self, tensors: Sequence[torch.Tensor], mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """Mix `tensors` (each `(..., dim)`); `mask` `(...)` is needed with layer norm."""
        if len(tensors) != self.mixture_size:
            raise ValueError(f"{len(tensors)} tensors for a mix of {self.mixture_size}")
        if self.layer is not None:  # the one layer, read alone: no zero weights times the rest
            tensors = [tensors[self.layer]]
        if self.do_layer_norm:
            if mask is None:
                raise ValueError("layer norm needs the mask")
            tensors = [_masked_layer_norm(tensor, mask) for tensor in tensors]
        if self.layer is not None:
            return self.gamma * tensors[0]
        weights = self.weights().split(1)
        pieces: List[torch.Tensor] = [weight * tensor for weight, tensor in zip(weights, tensors)]
        return self.gamma * sum(pieces)

    def weights(self) -> torch.Tensor:
        """The weight each tensor gets, `(mixture_size,)`: `softmax(w)`, or one-hot on `layer`."""
        raw = torch.cat(list(self.scalar_parameters))
        if self.layer is not None:
            return torch.zeros_like(raw).index_fill_(0, torch.tensor(self.layer % len(raw)), 1.0)
        return torch.softmax(raw, dim=0)


def _masked_layer_norm(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`(tensor - mean) / sqrt(var + tiny)` over the unmasked elements (AllenNLP's tiny value for
    float32, 1e-13, so that results match it)."""
    broadcast = mask.unsqueeze(-1).to(tensor.dtype)
    count = broadcast.sum() * tensor.size(-1)
    masked = tensor * broadcast
    mean = masked.sum() / count
    variance = (((masked - mean) * broadcast) ** 2).sum() / count
    tiny = 1e-13 if tensor.dtype in (torch.float32, torch.float64) else 1e-4
    return (tensor - mean) / torch.sqrt(variance + tiny)
