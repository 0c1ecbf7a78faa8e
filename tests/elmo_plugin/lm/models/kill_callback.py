"""A trainer callback for the `--recover` test: the process kills itself (SIGKILL, no clean-up) at
the end of epoch `$KILL_AFTER_EPOCH`, a deterministic stand-in for a preempted run (the epoch comes
from the environment so that the resumed run's config is the same). Loaded by the test's
subprocess with `--include-package tests.elmo_plugin.lm.models.kill_callback`."""

import os
import signal
from typing import Any

from allennlp.training.callbacks.callback import TrainerCallback


@TrainerCallback.register("test_kill_after_epoch")
class KillAfterEpoch(TrainerCallback):
    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self.epoch = int(os.environ.get("KILL_AFTER_EPOCH", "-1"))

    def on_epoch(
        self, trainer: Any, metrics: Any, epoch: int, is_primary: bool = True, **kwargs: Any
    ) -> None:
        if epoch == self.epoch:
            os.kill(os.getpid(), signal.SIGKILL)


class SignalAtBatch(TrainerCallback):
    """Sends this process `SIGNAL` as training batch `$VARIABLE` ("EPOCH:BATCH") ends."""

    SIGNAL = signal.SIGKILL
    VARIABLE = "KILL_AT_BATCH"

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        epoch, batch = os.environ.get(self.VARIABLE, "-1:-1").split(":")
        self.at = (int(epoch), int(batch))

    def on_batch(
        self,
        trainer: Any,
        batch_inputs: Any,
        batch_outputs: Any,
        batch_metrics: Any,
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        if is_training and (epoch, batch_number) == self.at:
            os.kill(os.getpid(), self.SIGNAL)


@TrainerCallback.register("test_kill_at_batch")
class KillAtBatch(SignalAtBatch):
    """SIGKILL as training batch `$KILL_AT_BATCH` ("EPOCH:BATCH", 1-based) of an epoch ends, after
    the checkpoints before it and before its own (a run preempted mid-epoch)."""
