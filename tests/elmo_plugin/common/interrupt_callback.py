"""A trainer callback for the interrupt test: the process sends itself SIGTERM as training batch
`$SIGTERM_AT_BATCH` ("EPOCH:BATCH", epoch from 0, batch from 1) ends, as a scheduler or `kill`
would mid-run. Loaded with `--include-package tests.elmo_plugin.common.interrupt_callback`."""

import signal

from allennlp.training.callbacks.callback import TrainerCallback

from tests.elmo_plugin.lm.models.kill_callback import SignalAtBatch


@TrainerCallback.register("test_sigterm_at_batch")
class SigtermAtBatch(SignalAtBatch):
    SIGNAL = signal.SIGTERM
    VARIABLE = "SIGTERM_AT_BATCH"
