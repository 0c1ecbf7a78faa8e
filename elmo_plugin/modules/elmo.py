"""ELMo representations: one biLM pass, any number of independent Eq. (1) mixes."""

from typing import Any, Dict, List, Optional, Sequence

import torch
from allennlp.common.checks import ConfigurationError
from torch import nn

from elmo_bilm.bilm import BiLm, frozen
from elmo_plugin.modules.activation_cache import ActivationCache
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
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
    dropped_by_model : `Sequence[int]`, optional
        Indices of the mixes whose vectors the task model drops with its own dropout: they skip
        `options.dropout`, so that every ELMo vector is dropped once.
    placements : `Sequence[str]`, optional
        Where each mix's vector enters the task model (`"input"` / `"output"` of its encoder), one
        per mix, for reports such as Figure 2 (`elmo-layer-weights`); empty if the owner does not say.
    """

    def __init__(
        self,
        options: ElmoOptions,
        num_output_representations: int = 1,
        bilm: Optional[BiLm] = None,
        dropped_by_model: Sequence[int] = (),
        placements: Sequence[str] = (),
    ) -> None:
        super().__init__()
        if placements and len(placements) != num_output_representations:
            raise ConfigurationError(
                f"{len(placements)} placements for {num_output_representations} mixes: {list(placements)}"
            )
        self.placements = list(placements)
        if bilm is None:
            bilm = load_bilm_or_archive(
                options.options_file, options.weight_file, options.archive_file
            )
        mix_parameters = options.initial_weights(bilm.num_layers)
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
                trainable_gamma=options.gamma,
            )
            for _ in range(num_output_representations)
        )
        if not set(dropped_by_model) <= set(range(num_output_representations)):
            raise ConfigurationError(
                f"dropped_by_model {list(dropped_by_model)} names a mix outside 0..{num_output_representations - 1}"
            )
        self.dropouts = nn.ModuleList(
            nn.Dropout(0.0 if index in dropped_by_model else options.dropout)
            for index in range(num_output_representations)
        )
        use_cache = options.cache_activations and not options.requires_grad
        self.cache = ActivationCache(options.cache_size_mb) if use_cache else None

    def get_output_dim(self) -> int:
        return self.bilm.get_output_dim()

    def cache_state(self) -> Dict[str, torch.Tensor]:
        """The activation cache's entries, for a checkpoint (`elmo_plugin_exact_recovery`)."""
        return self.cache.state() if self.cache is not None else {}

    def load_cache_state(self, state: Dict[str, torch.Tensor]) -> None:
        """Put back a `cache_state`: a resumed run serves the bits the interrupted one cached."""
        if self.cache is not None:
            self.cache.load_state(state)

    def bilm_layers(self, char_ids: torch.Tensor) -> Dict[str, Any]:
        """All biLM layers for `char_ids` (no gradient and eval mode when the biLM is frozen)."""
        if self.requires_grad:
            return self.bilm(char_ids)
        with frozen(self.bilm):
            if self.cache is not None:
                return self.cache.layers(char_ids, self.bilm)
            return self.bilm(char_ids)

    def mix(self, layers: List[torch.Tensor], mask: torch.Tensor) -> List[torch.Tensor]:
        """Apply every scalar mix and dropout to precomputed biLM `layers`."""
        return [
            dropout(scalar_mix(layers, mask))
            for scalar_mix, dropout in zip(self.scalar_mixes, self.dropouts)
        ]

    def forward(self, char_ids: torch.Tensor) -> Dict[str, Any]:
        """`char_ids` (batch, T, 50) -> `{"elmo_representations": [(batch, T, dim)] * n, "mask"}`."""
        output = self.bilm_layers(char_ids)
        mask = output["mask"]
        return {"elmo_representations": self.mix(output["activations"], mask), "mask": mask}
