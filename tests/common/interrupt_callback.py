"""A trainer callback for the interrupt test: the process sends itself SIGTERM as training batch
`$SIGTERM_AT_BATCH` ("EPOCH:BATCH", epoch from 0, batch from 1) ends, as a scheduler or `kill`
would mid-run. Loaded with `--include-package tests.common.interrupt_callback`."""

import os
import signal
from typing import Any

from allennlp.training.callbacks.callback import TrainerCallback


@TrainerCallback.register("test_sigterm_at_batch")
class SigtermAtBatch(TrainerCallback):
    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        epoch, batch = os.environ.get("SIGTERM_AT_BATCH", "-1:-1").split(":")
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
            os.kill(os.getpid(), signal.SIGTERM)
