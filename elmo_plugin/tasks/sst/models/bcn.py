"""BCN (McCann et al. 2017) with the plugin's biLM at the input and/or integrator output."""
from typing import List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp_models.classification.models.biattentive_classification_network import (
    BiattentiveClassificationNetwork,
)

from elmo_plugin.modules.bilm_loading import load_bilm
from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.text_field_embedders.elmo_placement_embedder import PLACEMENTS


class _BcnElmo(ElmoRepresentations):
    """`ElmoRepresentations` under the attribute name BCN reads (`_scalar_mixes`)."""

    @property
    def _scalar_mixes(self) -> List:
        return list(self.scalar_mixes)


@Model.register("elmo_plugin_bcn")
class ElmoBcn(BiattentiveClassificationNetwork):
    """allennlp-models' biattentive classification network (the paper's SST-5 baseline, Supplement
    A.8) with ELMo from the plugin's biLM: `elmo_placement` "input" (before the pre-encode
    feedforward), "output" (after the integrator, as in the paper) or "both", each with its own
    mix; null = the baseline. All other parameters are BCN's (without its `elmo` and `use_*_elmo`,
    which the placement sets); the dataset reader needs an `elmo_characters` indexer named "elmo".

    Registered as a `Model` with name "elmo_plugin_bcn".

    # Parameters

    elmo_placement : `str`, optional
    options_file, weight_file, archive_file, do_layer_norm, elmo_dropout, l2_coefficient, requires_grad, cache_activations
        The biLM and its mixes, as for `elmo_plugin_placement` (`elmo_dropout` is its `dropout`).
    """

    def __init__(
        self,
        elmo_placement: Optional[str] = None,
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        archive_file: Optional[str] = None,
        do_layer_norm: bool = False,
        elmo_dropout: float = 0.5,
        l2_coefficient: float = 0.0,
        requires_grad: bool = False,
        cache_activations: bool = True,
        **kwargs,
    ) -> None:
        elmo = None
        if elmo_placement is not None:
            if elmo_placement not in PLACEMENTS:
                raise ConfigurationError(f"elmo_placement must be one of {PLACEMENTS} or null, got {elmo_placement!r}")
            elmo = _BcnElmo(
                load_bilm(options_file, weight_file, archive_file),
                num_output_representations=2 if elmo_placement == "both" else 1,
                do_layer_norm=do_layer_norm,
                dropout=elmo_dropout,
                l2_coefficient=l2_coefficient,
                requires_grad=requires_grad,
                cache_activations=cache_activations,
            )
        super().__init__(
            elmo=elmo,
            use_input_elmo=elmo_placement in ("input", "both"),
            use_integrator_output_elmo=elmo_placement in ("output", "both"),
            **kwargs,
        )
