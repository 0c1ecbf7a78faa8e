"""Adds ELMo's `lambda * ||w||^2` to the regularisation penalty of every AllenNLP model.

AllenNLP's Trainer adds `model.get_regularization_penalty()` to the training loss (and reports it
as `reg_loss`). `install()` wraps that method so that it also sums the penalty of every
`ElmoScalarMix` in the model with a non-zero `lambda`. This is what lets the `l2_coefficient`
of the plugin's TokenEmbedder work in any model, without a `regularizer` block in the config.
Do not also put the scalar parameters under an AllenNLP `regularizer` regex: that would count the
penalty twice.
"""
from typing import Optional

import torch
from allennlp.models import Model

from elmo_plugin.modules.scalar_mix import ElmoScalarMix


def scalar_mix_penalty(model: torch.nn.Module) -> Optional[torch.Tensor]:
    """`sum lambda * ||w||^2` over the model's trainable ELMo mixes with `lambda > 0`, else None."""
    terms = [
        module.regularization_penalty()
        for module in model.modules()
        if isinstance(module, ElmoScalarMix) and module.penalized
    ]
    return torch.stack(terms).sum() if terms else None


def install() -> None:
    """Wrap `Model.get_regularization_penalty` once (idempotent)."""
    original = Model.get_regularization_penalty
    if getattr(original, "_elmo_plugin", False):
        return

    def get_regularization_penalty(self: Model) -> Optional[torch.Tensor]:
        penalty = original(self)
        elmo_penalty = scalar_mix_penalty(self)
        if elmo_penalty is None:
            return penalty
        return elmo_penalty if penalty is None else penalty + elmo_penalty

    get_regularization_penalty._elmo_plugin = True  # type: ignore[attr-defined]
    get_regularization_penalty.__doc__ = original.__doc__
    Model.get_regularization_penalty = get_regularization_penalty  # type: ignore[method-assign]
