"""ELMo's `lambda * ||w||^2` in the regularisation penalty of every AllenNLP model (hook 1 of
`elmo_plugin.hooks`).

AllenNLP's Trainer adds `model.get_regularization_penalty()` to the training loss (and reports it
as `reg_loss`). `install()` wraps that method so that it also sums the penalty of every trainable
`ElmoScalarMix` with a non-zero `lambda`. A mix whose raw weights the model's own AllenNLP
`regularizer` already reaches (a regex on `scalar_parameters`, as in allennlp-models' ELMo configs)
is left to that regulariser, so nothing is counted twice; a warning names it.
"""

import logging
import re
from typing import List, Optional

import torch
from allennlp.models import Model

from elmo_plugin.modules.scalar_mix import ElmoScalarMix

logger = logging.getLogger(__name__)


def _regularizer_patterns(model: torch.nn.Module) -> List[str]:
    """The parameter regexes of the model's AllenNLP `RegularizerApplicator`, if it has one."""
    applicator = getattr(model, "_regularizer", None)
    return [regex for regex, _ in getattr(applicator, "_regularizers", [])]


def scalar_mix_penalty(model: torch.nn.Module) -> Optional[torch.Tensor]:
    """`sum lambda * ||w||^2` over the model's trainable ELMo mixes with `lambda > 0` that its own
    regulariser does not reach, else None."""
    patterns = _regularizer_patterns(model)
    terms = []
    for name, module in model.named_modules():
        if not (isinstance(module, ElmoScalarMix) and module.penalized):
            continue
        parameter_names = [
            f"{name}.scalar_parameters.{i}" for i in range(len(module.scalar_parameters))
        ]
        covered = [p for p in parameter_names if any(re.search(regex, p) for regex in patterns)]
        if covered:
            if not getattr(module, "_double_count_warned", False):
                logger.warning(
                    "%s: the config's regularizer already reaches %s, so the mix's l2_coefficient "
                    "(lambda = %g) is not added again; drop one of the two",
                    name,
                    covered[0],
                    module.l2_coefficient,
                )
                setattr(module, "_double_count_warned", True)  # noqa: B010 (a flag, not a tensor)
            continue
        terms.append(module.regularization_penalty())
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
