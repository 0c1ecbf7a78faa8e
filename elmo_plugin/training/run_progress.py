"""The progress of the whole training run, one line after each epoch: AllenNLP's progress bar
shows the current epoch's batches only (issue 82 item 5)."""

import datetime
import logging
import time
from typing import Any, Callable, Dict, Optional

from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)

# the line's start, for readers of the log (`grep "Run progress"`)
PREFIX = "Run progress:"


def _duration(seconds: float) -> str:
    """`seconds` as H:MM:SS (whole seconds), as AllenNLP writes its epoch durations; beyond what
    a `timedelta` holds, in years."""
    try:
        return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))
    except OverflowError:
        return f"{seconds / (365.25 * 86400):.3g} years"


def _end(timestamp: float) -> str:
    """The local date and time at `timestamp`, or past the calendar's last year (a run of
    `num_epochs=10**9` ends long after it)."""
    try:
        return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError, OSError):
        return f"after the year {datetime.MAXYEAR}"


def progress_line(
    epochs_done: int, num_epochs: int, elapsed: float, epochs_timed: int, now: float
) -> str:
    """The line after epoch `epochs_done` (1-based) of `num_epochs`: `elapsed` seconds since this
    process started training, over `epochs_timed` epochs it trained (fewer than `epochs_done`
    after `--recover`), the run's time left from their mean and its end at `now` + that left (a
    run that stops early for patience ends sooner)."""
    mean = elapsed / max(epochs_timed, 1)
    left = mean * (num_epochs - epochs_done)
    line = (
        f"{PREFIX} epoch {epochs_done} of {num_epochs} done; elapsed {_duration(elapsed)}; "
        f"mean epoch {_duration(mean)}"
    )
    if epochs_done >= num_epochs:
        return f"{line}; the run is done"
    return f"{line}; ETA for the run {_duration(left)} (about {_end(now + left)})"


@TrainerCallback.register("elmo_plugin_run_progress")
class RunProgress(TrainerCallback):
    """Logs the progress of the whole run after each epoch (AllenNLP's progress bar and its
    0-based `Epoch 0/9` lines show the current epoch): at the start `Run progress: N epochs to
    train, epoch K first`, and after epoch k (1-based) of n

        Run progress: epoch 3 of 10 done; elapsed 0:12:04; mean epoch 0:04:01; ETA for the run
        0:28:10 (about 2026-12-02 01:10)

    The ETA is the mean epoch time of this process (training and validation) times the epochs
    left; after `--recover` the epochs trained before count in k, not in the mean. A run that
    runs out of patience ends before the ETA. Only the primary process logs.

    Registered as a `TrainerCallback` with name "elmo_plugin_run_progress".

    # Parameters

    serialization_dir : `str`
        Given by the trainer.
    clock : `Callable[[], float]`, optional (default = `time.time`)
        The clock the times are read from (a test gives its own).
    """

    def __init__(self, serialization_dir: str, clock: Optional[Callable[[], float]] = None) -> None:
        super().__init__(serialization_dir)
        self._clock: Callable[[], float] = clock or time.time
        self._started = 0.0
        self._first_epoch = 0

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        """Note the start time and the epochs done before this process (`--recover`)."""
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        self._started = self._clock()
        self._first_epoch = int(getattr(trainer, "_start_after_epochs_completed", 0))
        if is_primary:
            num_epochs = int(trainer._num_epochs)
            logger.info(
                "%s %d epochs to train, epoch %d first",
                PREFIX,
                num_epochs - self._first_epoch,
                self._first_epoch + 1,
            )

    def on_epoch(
        self,
        trainer: Any,
        metrics: Dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        """Log the run's progress after epoch `epoch` (0-based)."""
        if not is_primary:
            return
        now = self._clock()
        done = epoch + 1
        line = progress_line(
            done, int(trainer._num_epochs), now - self._started, done - self._first_epoch, now
        )
        logger.info("%s", line)
