"""ELMo representations: one biLM pass, any number of independent Eq. (1) mixes."""

from typing import Any, Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from torch import nn

from elmo_bilm.bilm import BiLm
from elmo_plugin.modules.activation_cache import ActivationCache
from elmo_plugin.modules.bilm_loading import load_bilm
from elmo_plugin.modules.elmo_options import ElmoOptions
from elmo_plugin.modules.scalar_mix import ElmoScalarMix


class ElmoRepresentations(nn.Module):
    """Runs a (frozen by default) `BiLm` once and mixes its layers into `num_output_representations`
    task-specific ELMo vectors, each with its own `softmax(w)`, `gamma`, and dropout (Sec. 3.2).

    # Parameters

    options : `ElmoOptions`
        The biLM and how its layers are mixed (the same options for every mix).
    num_output_representations : `int`, optional (default = `1`)
        Independent mixes, e.g. 2 for ELMo at the input and the output of a task encoder.
    bilm : `BiLm`, optional
        A biLM already in memory, instead of the files named by `options`.
    """

    def __init__(
        self, options: ElmoOptions, num_output_representations: int = 1, bilm: Optional[BiLm] = None
    ) -> None:
        super().__init__()
        if bilm is None:
            bilm = load_bilm(options.options_file, options.weight_file, options.archive_file)
        mix_parameters = options.scalar_mix_parameters
        if mix_parameters is not None and len(mix_parameters) != bilm.num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(mix_parameters)} values but the biLM has {bilm.num_layers} layers"
            )
        self.bilm = bilm
        self.requires_grad = options.requires_grad
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(options.requires_grad)
        self.scalar_mixes = nn.ModuleList(
            ElmoScalarMix(
                bilm.num_layers,
                do_layer_norm=options.do_layer_norm,
                l2_coefficient=options.l2_coefficient,
                initial_scalar_parameters=mix_parameters,
                trainable=mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self.dropout = nn.Dropout(options.dropout)
        use_cache = options.cache_activations and not options.requires_grad
        self.cache = ActivationCache(options.cache_size_mb) if use_cache else None

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
