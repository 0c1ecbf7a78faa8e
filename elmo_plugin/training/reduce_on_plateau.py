"""AllenNLP's `reduce_on_plateau` scheduler, fixed for torch >= 2.7 (which removed `verbose=`), under
a name of the plugin's own: AllenNLP's entry stays as it is (issue 58 item 3)."""

from typing import List, Union

import torch
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from torch.optim import Optimizer


@LearningRateScheduler.register("elmo_plugin_reduce_on_plateau")
class ReduceOnPlateauScheduler(_PyTorchLearningRateSchedulerWithMetricsWrapper):
    """torch's `ReduceLROnPlateau` (e.g. ESIM's "halve the learning rate on plateau").

    AllenNLP's `reduce_on_plateau` passes `verbose=` to torch and fails on torch >= 2.7; this one
    takes the same arguments (`verbose` accepted and ignored: the Trainer logs the learning rate).
    The plugin's configs name it; AllenNLP's own registration is left alone.

    Registered as a `LearningRateScheduler` with name "elmo_plugin_reduce_on_plateau".

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
