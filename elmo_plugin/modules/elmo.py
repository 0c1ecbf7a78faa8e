"""ELMo representations: one biLM pass, any number of independent Eq. (1) mixes."""
from typing import Any, Dict, List, Optional

import torch
from torch import nn

from elmo_bilm.bilm import BiLm
from elmo_plugin.modules.activation_cache import ActivationCache
from elmo_plugin.modules.scalar_mix import ElmoScalarMix


class ElmoRepresentations(nn.Module):
    """Runs a (frozen by default) `BiLm` once and mixes its layers into `num_output_representations`
    task-specific ELMo vectors, each with its own `softmax(w)`, `gamma`, and dropout (Sec. 3.2).

    # Parameters

    bilm : `BiLm`
    num_output_representations : `int`, optional (default = `1`)
        Independent mixes, e.g. 2 for ELMo at the input and the output of a task encoder.
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
        Dropout on each ELMo vector.
    l2_coefficient : `float`, optional (default = `0.0`)
        The paper's `lambda` on every mix's raw weights.
    scalar_mix_parameters : `List[float]`, optional
        Fixed raw weights (not trained), e.g. `[-9e10, -9e10, 1]` for the top layer only.
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM with the task. Frozen by default, as in the paper.
    cache_activations : `bool`, optional (default = `True`)
        With a frozen biLM, keep each sentence's biLM layers (CPU memory, see `ActivationCache`)
        so that later epochs skip the biLM. Exact; ignored when `requires_grad`.
    cache_size_mb : `float`, optional (default = `2048`)
        Memory bound of that cache.
    """

    def __init__(
        self,
        bilm: BiLm,
        num_output_representations: int = 1,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        l2_coefficient: float = 0.0,
        scalar_mix_parameters: Optional[List[float]] = None,
        requires_grad: bool = False,
        cache_activations: bool = True,
        cache_size_mb: float = 2048.0,
    ) -> None:
        super().__init__()
        if scalar_mix_parameters is not None and len(scalar_mix_parameters) != bilm.num_layers:
            raise ValueError(
                f"scalar_mix_parameters has {len(scalar_mix_parameters)} values but the biLM has "
                f"{bilm.num_layers} layers"
            )
        self.bilm = bilm
        self.requires_grad = requires_grad
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(requires_grad)
        self.scalar_mixes = nn.ModuleList(
            ElmoScalarMix(
                bilm.num_layers,
                do_layer_norm=do_layer_norm,
                l2_coefficient=l2_coefficient,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self.dropout = nn.Dropout(dropout)
        self.cache = ActivationCache(cache_size_mb) if cache_activations and not requires_grad else None

    def get_output_dim(self) -> int:
        return self.bilm.get_output_dim()

    def bilm_layers(self, char_ids: torch.Tensor) -> Dict[str, Any]:
        """All biLM layers for `char_ids` (no gradient and eval mode when the biLM is frozen)."""
        if self.requires_grad:
            return self.bilm(char_ids)
        was_training = self.bilm.training
        self.bilm.eval()
        try:
            with torch.no_grad():
                if self.cache is not None:
                    return self.cache.layers(char_ids, self.bilm)
                return self.bilm(char_ids)
        finally:
            self.bilm.train(was_training)

    def mix(self, layers: List[torch.Tensor], mask: torch.Tensor) -> List[torch.Tensor]:
        """Apply every scalar mix and dropout to precomputed biLM `layers`."""
        return [self.dropout(scalar_mix(layers, mask)) for scalar_mix in self.scalar_mixes]

    def forward(self, char_ids: torch.Tensor) -> Dict[str, Any]:
        """`char_ids` (batch, T, 50) -> `{"elmo_representations": [(batch, T, dim)] * n, "mask"}`."""
        output = self.bilm_layers(char_ids)
        mask = output["mask"]
        return {"elmo_representations": self.mix(output["activations"], mask), "mask": mask}

    def regularization_penalty(self) -> torch.Tensor:
        """Sum of `lambda * ||w||^2` over the mixes."""
        return sum(mix.regularization_penalty() for mix in self.scalar_mixes)
