"""The contract between `elmo_plugin_placement` and `elmo_plugin_output_elmo`, checked for every
model AllenNLP builds from a config (hook 5 of `elmo_plugin.hooks`)."""

from typing import Any

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model

from elmo_plugin.modules.seq2seq_encoders.output_elmo_encoder import OutputElmoEncoder
from elmo_plugin.modules.text_field_embedders.elmo_placement_embedder import (
    ElmoPlacementEmbedder,
)


def check_placement_contract(model: torch.nn.Module) -> None:
    """ELMo at the output needs the encoder wrapper (else the task encoder would silently take
    `ELMo_out` as input), a wrapper needs ELMo at the output (else it would cut task features),
    and their widths must agree."""
    embedders = [m for m in model.modules() if isinstance(m, ElmoPlacementEmbedder)]
    wrappers = [m for m in model.modules() if isinstance(m, OutputElmoEncoder)]
    with_output = [e for e in embedders if e.placement.at_output]
    if with_output and not wrappers:
        raise ConfigurationError(
            f"elmo_plugin_placement has placement {with_output[0].placement.name!r} but the model has no "
            "elmo_plugin_output_elmo encoder: wrap the task encoder in one (see elmo.libsonnet's "
            "encoder()), or use placement 'input'"
        )
    if wrappers and not with_output:
        raise ConfigurationError(
            "the model has an elmo_plugin_output_elmo encoder but no elmo_plugin_placement embedder "
            "with placement 'output' or 'both': the wrapper would cut off task features as ELMo"
        )
    for embedder in with_output:
        for wrapper in wrappers:
            if wrapper.elmo_dim != embedder.elmo_dim:
                raise ConfigurationError(
                    f"elmo_plugin_output_elmo has elmo_dim {wrapper.elmo_dim} but the biLM's ELMo "
                    f"vectors are {embedder.elmo_dim} wide (2 x its projection_dim)"
                )


def install() -> None:
    """Check the contract on every model built by `Model.from_params` (configs, archives); a
    second call changes nothing."""
    build = Model.from_params.__func__  # type: ignore[attr-defined]
    if getattr(build, "_elmo_plugin", False):
        return

    def from_params(cls: Any, *args: Any, **kwargs: Any) -> Any:
        model = build(cls, *args, **kwargs)
        check_placement_contract(model)
        return model

    from_params._elmo_plugin = True  # type: ignore[attr-defined]
    Model.from_params = classmethod(from_params)  # type: ignore[method-assign,assignment]
