"""`elmo-table1` shows its work and keeps the environment: each run's log path and its epoch and
batches (read from the log as AllenNLP writes it), no other library's INFO lines on the console
without `--verbose`, and the runs' data variables passed to their `allennlp train` processes
without changing `os.environ` (training stubbed; the follower is driven by calls, not sleeps)."""

import gzip
import json
import logging
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from elmo_bilm.utils import progress
from elmo_plugin.analysis import sweep, table1
from elmo_plugin.commands.elmo_table1 import ElmoTable1
from tests.conftest import REPO_ROOT
from tests.elmo_plugin.analysis.conftest import run_command

TINY_SST = str(REPO_ROOT / "fixtures" / "sst" / "tiny.txt")
STAMP = "2026-11-27 23:20:45,797 - INFO - "
TRAINER = STAMP + "allennlp.training.gradient_descent_trainer - "
# what `allennlp train` writes into a run's log, in the pieces a reader may find it in: log lines,
# tqdm statuses written with a carriage return and no newline, a log line glued to a status
RUN_LOG = [
    STAMP + "allennlp.common.plugins - Plugin allennlp_models available\n",
    STAMP + "allennlp.training.util - Reading training data from sst/train.txt\n",
    TRAINER + "Epoch 0/1\n",
    TRAINER + "Training\n",
    "  0%|          | 0/20 [00:00<?, ?it/s]",
    "\raccuracy: 0.38, loss: 1.09 ||:  45%|####5     | 9/20 [00:03<00:04,  2.50it/s]",
]


def finished_run(run_dir: Path) -> None:
    """What a finished `allennlp train` leaves for the table: config, metrics and archive."""
    run_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "dataset_reader": {"type": "elmo_plugin_sst", "granularity": "5-class"},
        "train_data_path": TINY_SST,
        "trainer": {"validation_metric": "+accuracy"},
    }
    (run_dir / "config.json").write_text(json.dumps(config))
    metrics = {"best_validation_accuracy": 0.5, "test_accuracy": 0.4}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    with tarfile.open(run_dir / "model.tar.gz", "w:gz") as tar:
        tar.add(run_dir / "config.json", arcname="config.json")


# -- issue 66 item 4: the runs' variables are passed, os.environ is left alone -------------------


def test_the_smoke_runs_variables_reach_the_train_call_and_os_environ_is_unchanged(
    tmp_path, monkeypatch
):
    for name in ("ELMO_PLUGIN_DATA", *table1.CONLL2003_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SST_TRAIN", "/elsewhere/train.txt")
    monkeypatch.delenv("SST_WORD_VECTORS", raising=False)
    vectors = str(tmp_path / "w2v_lower_300d.txt.gz")
    monkeypatch.setattr(table1, "build_smoke_vectors", lambda *a: {"SST_WORD_VECTORS": vectors})
    before = dict(os.environ)
    passed, environs = [], []

    def training(run_dir: Path, config_text: str, overrides, env) -> None:
        passed.append(dict(env))
        environs.append(dict(os.environ))
        finished_run(run_dir)

    table1.run_table(str(tmp_path / "smoke"), "smoke", [1], ["sst"], train_run=training)
    assert len(passed) == 2  # both rows
    for env in passed:
        assert env["SST_TRAIN"] == str(table1.SMOKE_DIR / "sst" / "train.txt")
        assert env["SST_DEV"] == str(table1.SMOKE_DIR / "sst" / "dev.txt")
        assert env["SST_WORD_VECTORS"] == vectors
    assert environs == [before, before]  # during each run
    assert dict(os.environ) == before  # and after
    assert not hasattr(table1, "environment")


def test_train_sets_the_variables_for_its_process_alone(tmp_path, monkeypatch):
    calls = []

    def fake_run(command, **kwargs):
        calls.append(kwargs)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(sweep.subprocess, "run", fake_run)
    monkeypatch.setenv("SST_TRAIN", "/elsewhere/train.txt")
    before = dict(os.environ)
    run_dir = tmp_path / "sst" / "run"
    sweep.train(run_dir, "{}", None, env={"SST_TRAIN": "/smoke/train.txt"})
    sweep.train(run_dir, "{}", None)  # no variables: the process inherits the environment
    assert calls[0]["env"] == {**before, "SST_TRAIN": "/smoke/train.txt"}
    assert calls[1]["env"] is None
    assert dict(os.environ) == before


def test_sweep_passes_its_env_to_every_train_call(tmp_path):
    seen = []

    def training(run_dir: Path, config_text: str, overrides, env) -> None:
        seen.append(env)
        finished_run(run_dir)

    config = str(table1.CONFIG_DIR / table1.TASKS["sst"].config)
    runs = table1.runs([1], 1.0)
    list(sweep.sweep(config, str(tmp_path), runs, train_run=training, env={"A": "1"}))
    assert seen == [{"A": "1"}, {"A": "1"}]


# -- issue 69 item 3: each run's log path, epoch and batches; no other library's INFO lines ------


def test_the_follower_reads_only_what_the_log_gains_and_shows_epoch_and_batches(
    tmp_path, capsys, monkeypatch
):
    # each poll shown (not a line a minute, as in a log): the captured stderr is no terminal
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    log = tmp_path / "run.log"
    log.write_text(TRAINER + "Epoch 5/9\n")  # an earlier invocation of a resumed run
    follower = sweep.RunFollower(log)  # no thread: polled by the test
    follower.poll()
    assert follower.epoch is None and follower.status() == "  starting"
    shown = []
    for piece in RUN_LOG:
        with open(log, "a") as handle:
            handle.write(piece)
        follower.poll()
        shown.append(follower.status())
    assert shown[1] == "  reading data"
    assert shown[2] == "  epoch 1 of 2, starting the epoch"
    assert shown[3] == "  epoch 1 of 2, training"
    assert shown[4] == "  epoch 1 of 2, training: batch 0/20 (0%)"  # no estimate yet
    assert shown[5] == "  epoch 1 of 2, training: batch 9/20 (45%), 00:04 left of the pass"
    # a line cut mid-write is read whole once its end arrives
    for piece in (TRAINER + "Valid", "ating\n", "  0%|          | 0/5 [00:00<?, ?it/s]\r"):
        with open(log, "a") as handle:
            handle.write(piece)
        follower.poll()
    assert follower.status() == "  epoch 1 of 2, validating: batch 0/5 (0%)"
    with open(log, "a") as handle:
        handle.write(TRAINER + "Epoch 1/1\n" + STAMP + "allennlp.commands.train - The model will "
                     "be evaluated using the best epoch weights.\n")  # fmt: skip
    follower.poll()
    assert follower.status() == "  epoch 2 of 2, testing"
    follower.close()
    assert "epoch 1 of 2, training: batch 9/20 (45%), 00:04 left of the pass" in (
        capsys.readouterr().err
    )


def test_a_follower_with_an_interval_stops_on_close(tmp_path):
    log = tmp_path / "run.log"
    follower = sweep.RunFollower(log, interval=3600.0)  # its thread would poll once an hour
    log.write_text(TRAINER + "Epoch 0/2\n")
    follower.close()  # stops the thread at once, then reads what is there
    assert follower.epoch == (1, 3)
    assert follower._thread is not None and not follower._thread.is_alive()


class _Stderr(logging.StreamHandler):
    """A handler writing to `sys.stderr` as it is when a record comes (pytest's capture)."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


@pytest.fixture
def console(capsys):
    """AllenNLP's console logging (`allennlp/__main__.py`: INFO on stderr) while the command runs
    in this process, the root logger's handlers and level restored afterwards."""
    root = logging.getLogger()
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s"))
    level = root.level
    # `allennlp evaluate` run in this process by an earlier test disables its params logger for
    # good (allennlp/commands/evaluate.py); the lines asked for with --verbose need it enabled
    loggers = [
        logger
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and name.split(".")[0] in ("allennlp", "gensim")
    ]
    disabled = {logger: logger.disabled for logger in loggers}
    for logger in loggers:
        logger.disabled = False
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield capsys
    root.removeHandler(handler)
    root.setLevel(level)
    for logger, was in disabled.items():
        logger.disabled = was


@pytest.mark.parametrize("verbose", [False, True])
def test_elmo_table1_shows_each_runs_log_and_progress_and_no_gensim_lines(
    tmp_path, monkeypatch, console, verbose
):
    for name in ("ELMO_PLUGIN_DATA", *table1.CONLL2003_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    # the smoke vectors are trained in this process with gensim, on a few sentences here
    wikipedia = tmp_path / "sentences.txt.gz"
    with gzip.open(wikipedia, "wt") as handle:
        handle.write("the film is good .\nthe film is bad .\na good film , a bad plot .\n" * 3)
    monkeypatch.setattr(table1, "SMOKE_WIKIPEDIA", wikipedia)
    monkeypatch.setattr(sweep, "FOLLOW_SECONDS", None)  # no thread: the fake run polls
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)  # each poll shown, as on a terminal
    followers = []

    class Recorded(sweep.RunFollower):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            followers.append(self)

    monkeypatch.setattr(sweep, "RunFollower", Recorded)
    logs = []

    def fake_train(run_dir: Path, config_text: str, overrides, env=None) -> None:
        """An `allennlp train` that writes its progress into its log as the follower reads it."""
        log = sweep.log_path(run_dir)
        log.parent.mkdir(parents=True, exist_ok=True)
        logs.append(log)
        assert followers[-1].log_file == log  # the run's own log is followed
        for piece in RUN_LOG:
            with open(log, "a") as handle:
                handle.write(piece)
            followers[-1].poll()
        assert followers[-1].status().endswith("training: batch 9/20 (45%), 00:04 left of the pass")
        finished_run(run_dir)

    monkeypatch.setattr(sweep, "train", fake_train)
    out = tmp_path / "smoke"
    argv = ["-s", str(out), "--scale", "smoke", "--seeds", "1", "--tasks", "sst"]
    run_command(ElmoTable1, ["elmo-table1", *argv, *(["--verbose"] if verbose else [])])
    captured = console.readouterr()
    shown = captured.out + captured.err
    assert len(logs) == 2  # both rows
    for log in logs:
        assert f"training, log {log}" in shown  # where each run's log is
    assert "epoch 1 of 2, training: batch 9/20 (45%), 00:04 left of the pass" in shown
    lines = shown.splitlines()
    gensim_lines = [line for line in lines if " - INFO - gensim." in line]
    allennlp_lines = [line for line in lines if " - INFO - allennlp." in line]  # its params
    if verbose:
        assert gensim_lines and allennlp_lines  # asked for
    else:
        assert gensim_lines == [] and allennlp_lines == []
        assert any(" - INFO - elmo_plugin.data.word_vectors - " in line for line in lines)  # own
    assert (out / "table1.md").is_file()
    assert logging.getLogger("gensim").level == logging.NOTSET  # restored after the command
