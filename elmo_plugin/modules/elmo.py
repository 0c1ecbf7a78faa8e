"""ELMo representations: one biLM pass, any number of independent Eq. (1) mixes."""

from typing import Any, Dict, List, Optional, Sequence

import torch
from allennlp.common.checks import ConfigurationError
from torch import nn

from elmo_bilm.model.bilm import BiLm, frozen
from elmo_plugin.modules.activation_cache import ActivationCache
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
from elmo_plugin.modules.elmo_options import ElmoOptions
from elmo_plugin.modules.placement import INPUT, Placement
from elmo_plugin.modules.scalar_mix import ElmoScalarMix


class ElmoRepresentations(nn.Module):
    """Runs a (frozen by default) `BiLm` once and mixes its layers into one task-specific ELMo vector
    per mix of its `placement`, each with its own `softmax(w)`, `gamma`, and dropout (Sec. 3.2).

    # Parameters

    options : `ElmoOptions`
        The biLM and how its layers are mixed (the same options for every mix).
    placement : `Placement`, optional (default = `Placement("input")`)
        Where the vectors enter the task model: one mix per name in `placement.mixes`, in that
        order (e.g. 2 for ELMo at the input and the output of a task encoder).
    bilm : `BiLm`, optional
        A biLM already in memory, instead of the files named by `options`.
    dropped_by_model : `Sequence[str]`, optional
        The mixes (`"input"`, `"output"`) whose vectors the task model drops with its own dropout:
        they skip `options.dropout`, so that every ELMo vector is dropped once.
    """

    def __init__(
        self,
        options: ElmoOptions,
        placement: Placement = Placement(INPUT),
        bilm: Optional[BiLm] = None,
        dropped_by_model: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.placement = placement
        dropped = placement.indices(dropped_by_model)
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
            for _ in placement.mixes
        )
        self.dropouts = nn.ModuleList(
            nn.Dropout(0.0 if index in dropped else options.dropout)
            for index in range(len(placement.mixes))
        )
        use_cache = options.cache_activations and not options.requires_grad
        self.cache = ActivationCache(options.cache_size_mb) if use_cache else None

    def get_output_dim(self) -> int:
        """The width of each ELMo representation (twice the biLM's projection)."""
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
                # layers of another inference precision (`set_precision`) are other layers
                precision = self.bilm.char_cnn.precision
                context = b"" if precision == "float32" else precision.encode() + b"\0"
                return self.cache.layers(char_ids, self.bilm, context)
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
