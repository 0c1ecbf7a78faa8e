"""ELMo representations: one biLM pass, any number of independent Eq. (1) mixes."""

import functools
from typing import Any, Dict, Optional, Sequence

import torch
from allennlp.common.checks import ConfigurationError

from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.runtime.mixes import ElmoMixes
from elmo_plugin.modules.activation_cache import ActivationCache
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
from elmo_plugin.modules.elmo_options import ElmoOptions
from elmo_plugin.modules.placement import INPUT, Placement
from elmo_plugin.modules.scalar_mix import ElmoScalarMix


class ElmoRepresentations(ElmoMixes):
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
        dropped = placement.indices(dropped_by_model)
        if bilm is None:
            bilm = load_bilm_or_archive(
                options.options_file, options.weight_file, options.archive_file
            )
        mix_parameters = options.scalar_mix_parameters
        if mix_parameters is not None and len(mix_parameters) != bilm.num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(mix_parameters)} values but the biLM has {bilm.num_layers} layers"
            )
        super().__init__(
            bilm,
            [0.0 if index in dropped else options.dropout for index in range(len(placement.mixes))],
            requires_grad=options.requires_grad,
            do_layer_norm=options.do_layer_norm,
            layers=options.layer_choice(),
            trainable_gamma=options.gamma,
            scalar_mix=functools.partial(ElmoScalarMix, l2_coefficient=options.l2_coefficient),
        )
        self.placement = placement
        use_cache = options.cache_activations and not options.requires_grad
        self.cache = ActivationCache(options.cache_size_mb) if use_cache else None

    def cache_state(self) -> Dict[str, torch.Tensor]:
        """The activation cache's entries, for a checkpoint (`elmo_plugin_exact_recovery`)."""
        return self.cache.state() if self.cache is not None else {}

    def load_cache_state(self, state: Dict[str, torch.Tensor]) -> None:
        """Put back a `cache_state`: a resumed run serves the bits the interrupted one cached."""
        if self.cache is not None:
            self.cache.load_state(state)

    def bilm_layers(self, char_ids: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """All biLM layers for `char_ids`, served by the activation cache when there is one (a
        frozen biLM's, in eval mode and without gradient)."""
        if self.cache is None or kwargs:
            return super().bilm_layers(char_ids, **kwargs)
        with frozen(self.bilm):
            # layers of another inference precision (`set_precision`) are other layers
            precision = self.bilm.char_cnn.precision
            context = b"" if precision == "float32" else precision.encode() + b"\0"
            return self.cache.layers(char_ids, self.bilm, context)
