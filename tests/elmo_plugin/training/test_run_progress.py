"""The whole run's progress after each epoch (`elmo_plugin_run_progress`, issue 82 item 5): the
line's figures from a given clock, and the lines a tiny biLM's training logs."""

import json
import re
from types import SimpleNamespace
from typing import List

import pytest
from allennlp.commands.train import train_model_from_file

from elmo_plugin.training.run_progress import PREFIX, RunProgress, progress_line
from tests.elmo_plugin.lm.models.test_bilm_language_model import TINY


class Clock:
    """A clock that reads the times it is given, in turn."""

    def __init__(self, *times: float) -> None:
        self.times: List[float] = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_the_line_counts_epochs_from_one_and_the_eta_from_the_mean_epoch() -> None:
    start = 1_000_000.0
    line = progress_line(3, 10, 726.0, 3, start)
    assert line.startswith(
        "Run progress: epoch 3 of 10 done; elapsed 0:12:06; mean epoch 0:04:02; "
        "ETA for the run 0:28:14 (about "
    ), line
    assert progress_line(10, 10, 600.0, 10, start) == (
        "Run progress: epoch 10 of 10 done; elapsed 0:10:00; mean epoch 0:01:00; the run is done"
    )


def test_after_recover_the_earlier_epochs_count_in_k_not_in_the_mean(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Resumed after 4 of 10 epochs: k continues from 5, the mean is over this process's."""
    trainer = SimpleNamespace(_num_epochs=10, _start_after_epochs_completed=4)
    callback = RunProgress("unused", clock=Clock(100.0, 400.0, 700.0))
    with caplog.at_level("INFO", logger="elmo_plugin.training.run_progress"):
        callback.on_start(trainer)
        callback.on_epoch(trainer, metrics={}, epoch=4)
        callback.on_epoch(trainer, metrics={}, epoch=5)
        callback.on_epoch(trainer, metrics={}, epoch=6, is_primary=False)  # a worker: no line
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == "Run progress: 6 epochs to train, epoch 5 first"
    assert lines[1].startswith(
        "Run progress: epoch 5 of 10 done; elapsed 0:05:00; mean epoch 0:05:00; "
        "ETA for the run 0:25:00"
    ), lines[1]
    assert lines[2].startswith(
        "Run progress: epoch 6 of 10 done; elapsed 0:10:00; mean epoch 0:05:00; "
        "ETA for the run 0:20:00"
    ), lines[2]
    assert len(lines) == 3


LINE = re.compile(
    re.escape(PREFIX) + r" epoch (\d+) of (\d+) done; elapsed \d+:\d\d:\d\d; "
    r"mean epoch \d+:\d\d:\d\d; (?:ETA for the run \d+:\d\d:\d\d "
    r"\(about \d{4}-\d\d-\d\d \d\d:\d\d\)|the run is done)$"
)


@pytest.mark.slow
def test_a_tiny_training_logs_epoch_k_of_n_after_each_epoch(tmp_path, repo_root) -> None:
    """Three epochs of the tiny biLM: the start line, then epoch 1, 2, 3 of 3, the last saying
    the run is done, in the run's `out.log`."""
    overrides = {
        "trainer.num_epochs": 3,
        "trainer.callbacks": [{"type": "elmo_plugin_run_progress"}],
    }
    out = tmp_path / "run"
    train_model_from_file(str(repo_root / TINY), str(out), overrides=json.dumps(overrides))
    log = (out / "out.log").read_text()
    lines = [line.split(" - ", 3)[-1] for line in log.splitlines() if PREFIX in line]
    assert lines[0] == "Run progress: 3 epochs to train, epoch 1 first"
    matches = [LINE.match(line) for line in lines[1:]]
    assert all(matches), lines
    assert [(m.group(1), m.group(2)) for m in matches if m] == [("1", "3"), ("2", "3"), ("3", "3")]
    assert lines[-1].endswith("the run is done")
    assert "ETA for the run" in lines[1] and "ETA for the run" in lines[2]


@pytest.mark.parametrize("num_epochs", [10**9, 10**12, 10**30])
def test_an_end_past_the_calendar_is_a_line_not_an_error(num_epochs: int) -> None:
    """`num_epochs=10**9` at an hour an epoch ends some 114,000 years on: the callback raised
    `ValueError: year ... is out of range` after the first epoch."""
    line = progress_line(1, num_epochs, 3600.0, 1, 1_700_000_000.0)
    assert line.startswith(f"{PREFIX} epoch 1 of {num_epochs} done; elapsed 1:00:00")
    assert line.endswith("(about after the year 9999)")
