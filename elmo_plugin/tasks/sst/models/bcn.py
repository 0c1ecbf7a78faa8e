"""BCN (McCann et al. 2017) with the plugin's biLM at the input and/or integrator output."""

from typing import List, Optional

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp_models.classification.models.biattentive_classification_network import (
    BiattentiveClassificationNetwork,
)

from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import ElmoOptions
from elmo_plugin.modules.placement import INPUT, Placement

# allennlp-models' BCN keys that `elmo_placement` replaces
ALLENNLP_BCN_KEYS = ("use_input_elmo", "use_integrator_output_elmo", "num_output_representations")


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
    mix; null = the baseline. All other parameters are BCN's (without its `use_*_elmo` flags,
    which the placement sets); the dataset reader needs an `elmo_characters` indexer named "elmo".

    Registered as a `Model` with name "elmo_plugin_bcn".

    # Parameters

    elmo_placement : `str`, optional
        `"input"`, `"output"` or `"both"`; null = no ELMo.
    elmo : `ElmoOptions`, optional
        The ELMo options, under the same names as every ELMo component (BCN's own `dropout` is a
        different parameter); defaults when not given. The input ELMo skips `elmo.dropout`: BCN's
        `embedding_dropout` already drops it (each ELMo vector is dropped once).
    """

    @classmethod
    def from_params(cls, params: Params, **extras) -> "ElmoBcn":  # type: ignore[override]
        """A config converted from allennlp-models' BCN gets a `ConfigurationError` that says
        what replaces its ELMo keys, before AllenNLP reports them as extra parameters."""
        replaced = [key for key in ALLENNLP_BCN_KEYS if key in params]
        elmo = params.get("elmo")
        if replaced or (isinstance(elmo, (dict, Params)) and "type" in elmo):
            raise ConfigurationError(
                f"elmo_plugin_bcn does not take allennlp-models' BCN ELMo keys {replaced or ['elmo.type']}: "
                'set `elmo_placement` ("input" for use_input_elmo, "output" for '
                'use_integrator_output_elmo, "both" for both; it sets num_output_representations) and '
                "give `elmo` the ELMo options (options_file, weight_file, do_layer_norm, dropout, ...) "
                "without `type` or `num_output_representations`"
            )
        return super().from_params(params, **extras)  # type: ignore[return-value]

    def __init__(
        self, elmo_placement: Optional[str] = None, elmo: Optional[ElmoOptions] = None, **kwargs
    ) -> None:
        placement = Placement.parse(elmo_placement)
        representations = None
        if placement is not None:
            representations = _BcnElmo(
                elmo or ElmoOptions(),
                placement=placement,
                # BCN's embedding dropout drops the input ELMo
                dropped_by_model=[INPUT] if placement.at_input else [],
            )
        elif elmo is not None:
            raise ConfigurationError(
                "elmo options given but elmo_placement is null; set elmo_placement"
            )
        super().__init__(
            elmo=representations,
            use_input_elmo=placement is not None and placement.at_input,
            use_integrator_output_elmo=placement is not None and placement.at_output,
            **kwargs,
        )
