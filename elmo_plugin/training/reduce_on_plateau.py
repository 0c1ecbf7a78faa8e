"""AllenNLP's `reduce_on_plateau` scheduler on torch >= 2.7, which removed `verbose=` from
`ReduceLROnPlateau` (issue 69 item 5): registered under AllenNLP's own name by `install()`
(hook 8 of `elmo_plugin.hooks`, a compatibility entry), so every config that names it builds, and under the name the
plugin's configs and the archives trained with them carry, `elmo_plugin_reduce_on_plateau`."""

import logging
from typing import List, Optional, Union

import torch
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler,
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from torch.optim import Optimizer

logger = logging.getLogger(__name__)


@LearningRateScheduler.register("elmo_plugin_reduce_on_plateau")
class ReduceOnPlateauScheduler(ReduceOnPlateauLearningRateScheduler):
    """AllenNLP's `reduce_on_plateau` (torch's `ReduceLROnPlateau`, e.g. ESIM's "halve the learning
    rate on plateau"), with the same parameters and schedule, on any torch.

    AllenNLP 2.10 passes `verbose=` to torch, which torch >= 2.7 refuses (`TypeError: ... unexpected
    keyword argument 'verbose'`). This one never passes it; `verbose: true` logs each reduction
    itself, in the words torch printed (`Epoch 3: reducing learning rate of group 0 to 2.0000e-04.`).
    A subclass of AllenNLP's class, so `isinstance` checks hold.

    Registered as a `LearningRateScheduler` with name "elmo_plugin_reduce_on_plateau", and by
    importing the plugin under AllenNLP's "reduce_on_plateau" (`install`).

    # Parameters

    optimizer : `Optimizer`
        Given by the Trainer.
    mode, factor, patience, threshold_mode, threshold, cooldown, min_lr, eps
        As torch's `ReduceLROnPlateau` (`mode` "min" or "max", `threshold_mode` "rel" or "abs").
    verbose : `bool`, optional (default = `False`)
        Log a line at each reduction (torch's own `verbose`).
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
        # AllenNLP's __init__ is the one that passes `verbose`: its parent's builds the wrapper.
        # torch 2 made ReduceLROnPlateau an LRScheduler; AllenNLP's annotation predates that
        _PyTorchLearningRateSchedulerWithMetricsWrapper.__init__(self, lr_scheduler)  # type: ignore[arg-type]
        self.verbose = verbose

    def step(self, metric: Optional[float] = None) -> None:
        groups = self.lr_scheduler.optimizer.param_groups
        before = [group["lr"] for group in groups]
        super().step(metric)  # type: ignore[arg-type]  # AllenNLP annotates `metric: float = None`
        if not self.verbose:
            return
        epoch = self.lr_scheduler.last_epoch
        for index, (old, group) in enumerate(zip(before, groups)):
            if group["lr"] < old:
                logger.info(
                    "Epoch %d: reducing learning rate of group %d to %.4e.",
                    epoch,
                    index,
                    group["lr"],
                )


def install() -> None:
    """Register `ReduceOnPlateauScheduler` under AllenNLP's name "reduce_on_plateau" (over
    AllenNLP's, which fails on this torch); idempotent."""
    if LearningRateScheduler.by_name("reduce_on_plateau") is not ReduceOnPlateauScheduler:
        LearningRateScheduler.register("reduce_on_plateau", exist_ok=True)(ReduceOnPlateauScheduler)
