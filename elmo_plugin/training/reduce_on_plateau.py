"""AllenNLP's `reduce_on_plateau` scheduler, fixed for torch >= 2.7 (which removed `verbose=`)."""

from typing import List, Union

import torch
from allennlp.common.registrable import Registrable
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from torch.optim import Optimizer


class ReduceOnPlateauScheduler(_PyTorchLearningRateSchedulerWithMetricsWrapper):
    """torch's `ReduceLROnPlateau` (e.g. ESIM's "halve the learning rate on plateau").

    Replaces AllenNLP's registration of the same name, whose constructor passes `verbose=` to torch
    and fails on torch >= 2.7. `verbose` is still accepted, so existing configs keep working, and
    ignored (the Trainer logs the learning rate).

    Registered as a `LearningRateScheduler` with name "reduce_on_plateau".

    # Parameters

    optimizer : `Optimizer`
        Given by the Trainer.
    mode, factor, patience, threshold_mode, threshold, cooldown, min_lr, eps
        As torch's `ReduceLROnPlateau` (`mode` "min" or "max", `threshold_mode` "rel" or "abs").
    verbose : `bool`, optional (default = `False`)
        Accepted for old configs and ignored.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, List[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,  # type: ignore[arg-type]  # a str: FromParams does not read Literal
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,  # type: ignore[arg-type]
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        # torch 2 made ReduceLROnPlateau an LRScheduler; AllenNLP's annotation predates that
        super().__init__(lr_scheduler)  # type: ignore[arg-type]


# Over AllenNLP's entry of the same name, set directly: `register(..., exist_ok=True)` would log an
# INFO line about the overwrite on every `allennlp` start (the registry holds (class, constructor)).
Registrable._registry[LearningRateScheduler]["reduce_on_plateau"] = (ReduceOnPlateauScheduler, None)
