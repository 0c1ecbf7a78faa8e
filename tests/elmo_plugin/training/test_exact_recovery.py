"""`--recover` after a kill in the middle of an epoch retraces the uninterrupted run: the same
final weights and the same metrics, epoch by epoch (`elmo_plugin_exact_recovery`)."""

import json
import os
import signal
import subprocess
from types import SimpleNamespace

import pytest
import torch
from allennlp.commands.train import train_model_from_file

from tests.elmo_plugin.lm.models.test_bilm_language_model import TINY, allennlp_command

pytestmark = pytest.mark.slow

EPOCHS = 3
# randomness everywhere it can be: dropout, sampled-softmax negatives, shuffled batches; a
# checkpoint every 3 batches (8 batches an epoch)
OVERRIDES = {
    "model.dropout": 0.1,
    "model.num_samples": 8,
    "trainer.num_epochs": EPOCHS,
    "trainer.checkpointer": {"type": "elmo_plugin_safe", "save_every_num_batches": 3},
    "trainer.callbacks": [{"type": "elmo_plugin_exact_recovery"}],
}


def test_recover_after_a_mid_epoch_kill_retraces_the_run(tmp_path, repo_root):
    out = tmp_path / "run"
    killed = {**OVERRIDES}
    killed["trainer.callbacks"] = OVERRIDES["trainer.callbacks"] + [{"type": "test_kill_at_batch"}]
    command = allennlp_command("train", repo_root / TINY, "-s", out)
    command += ["--include-package", "tests.elmo_plugin.lm.models.kill_callback"]
    # killed as batch 5 of epoch 1 ends: the newest checkpoint is after batch 3 of that epoch
    environment = {**os.environ, "KILL_AT_BATCH": "1:5"}
    result = subprocess.run(
        command + ["-o", json.dumps(killed)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    assert (out / "training_state_e1_b3.th").is_file()
    assert not (out / "metrics_epoch_1.json").exists()
    result = subprocess.run(
        command + ["-o", json.dumps(killed), "--recover"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resumed exactly after batch 3 of epoch 1" in (out / "out.log").read_text()

    straight = tmp_path / "straight"
    train_model_from_file(str(repo_root / TINY), str(straight), overrides=json.dumps(OVERRIDES))
    recovered, reference = torch.load(out / "best.th"), torch.load(straight / "best.th")
    assert all(torch.equal(recovered[name], reference[name]) for name in reference)
    # the callback only watches an uninterrupted run: the same weights without it
    plain = tmp_path / "plain"
    train_model_from_file(
        str(repo_root / TINY),
        str(plain),
        overrides=json.dumps({**OVERRIDES, "trainer.callbacks": []}),
    )
    unwatched = torch.load(plain / "best.th")
    assert all(torch.equal(unwatched[name], reference[name]) for name in reference)
    for epoch in range(EPOCHS):
        name = f"metrics_epoch_{epoch}.json"
        got, expected = (json.loads((run / name).read_text()) for run in (out, straight))
        for key, value in expected.items():
            if key == "training_loss":
                # the resumed epoch's sum is the saved part plus the rest: float64 additions in
                # another order
                assert got[key] == pytest.approx(value, rel=1e-12), (epoch, key)
            elif key.startswith(("training_", "validation_", "best_validation_")) and not (
                key.endswith("_memory_MB") or key == "training_duration"
            ):
                assert got[key] == value, (epoch, key)


def test_metric_state_round_trips_through_a_weights_only_checkpoint(tmp_path):
    """Running metrics (AllenNLP metrics, a dict of them, the coreference scorers with their
    function attributes, a non-persistent buffer) survive `torch.save` / `torch.load` with
    `weights_only` and come back into a fresh model."""
    from collections import defaultdict

    from allennlp.training.metrics import Average, CategoricalAccuracy
    from allennlp_models.coref.metrics.conll_coref_scores import ConllCorefScores

    from elmo_plugin.training.exact_recovery import metric_state, set_metric_state

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)
            self.accuracy = CategoricalAccuracy()
            self.metrics = {"average": Average()}
            self.coref = ConllCorefScores()
            self.register_buffer("totals", torch.zeros(3, dtype=torch.float64), persistent=False)

    model = Model()
    model.accuracy(torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), torch.tensor([1, 1, 1]))
    model.metrics["average"](3.0)
    model.metrics["average"](4.0)
    for k, scorer in enumerate(model.coref.scorers):
        scorer.precision_numerator, scorer.precision_denominator = 2 + k, 5
        scorer.recall_numerator, scorer.recall_denominator = 1, 4 + k
    model.accuracy.counts = defaultdict(int, {"seen": 3})  # a defaultdict keeps its default
    model.totals += torch.tensor([1.5, 2.5, 7.0], dtype=torch.float64)
    torch.save(metric_state(model), tmp_path / "state.th")
    fresh = Model()
    fresh.accuracy.counts = defaultdict(int)
    set_metric_state(fresh, torch.load(tmp_path / "state.th"))  # weights_only: torch's default
    assert fresh.accuracy.get_metric() == pytest.approx(2 / 3)
    assert fresh.metrics["average"].get_metric() == 3.5
    assert fresh.coref.get_metric() == model.coref.get_metric()
    assert fresh.coref.scorers[0].metric is model.coref.scorers[0].metric  # a function: kept
    assert fresh.accuracy.counts["unseen"] == 0 and fresh.accuracy.counts["seen"] == 3
    assert torch.equal(fresh.totals, model.totals)


def test_recover_retraces_a_task_run_with_elmo_caches(tmp_path, repo_root):
    """NER + ELMo (frozen biLM, activation and word caches on): killed in the middle of epoch 1,
    whose batches are all served from the caches, and recovered, the run ends with the same
    weights, bit for bit, as one never stopped. Without the caches in the checkpoint the resumed
    process recomputes every sentence in epoch 1's batches, whose bits differ from epoch 0's."""
    config = repo_root / "training_config" / "conll2003_crf_tagger_elmo.jsonnet"
    data = {
        "dataset_reader.max_instances": 160,
        "data_loader.batch_sampler.batch_size": 16,
        "trainer.num_epochs": 2,
        "trainer.checkpointer": {"type": "elmo_plugin_safe", "save_every_num_batches": 2},
    }
    killed = {
        **data,
        "trainer.callbacks": [
            {"type": "elmo_plugin_exact_recovery"},
            {"type": "test_kill_at_batch"},
        ],
    }
    command = allennlp_command("train", config, "-s", tmp_path / "run", "-o", json.dumps(killed))
    command += ["--include-package", "tests.elmo_plugin.lm.models.kill_callback"]
    for extra, env in (([], {"KILL_AT_BATCH": "1:5"}), (["--recover"], {})):
        result = subprocess.run(
            command + extra,
            cwd=repo_root,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **env},  # CONLL2003_*: the bundled CoNLL-2003 (conftest)
        )
        assert result.returncode == (0 if extra else -signal.SIGKILL), result.stderr[-3000:]
    assert "Resumed exactly after batch 4 of epoch 1" in (tmp_path / "run" / "out.log").read_text()
    train_model_from_file(str(config), str(tmp_path / "straight"), overrides=json.dumps(data))
    # the weights at the end (best.th may be epoch 0's, from before the kill)
    recovered = torch.load(tmp_path / "run" / "model_state_e2_b0.th")
    reference = torch.load(tmp_path / "straight" / "model_state_e2_b0.th")
    differ = [name for name in reference if not torch.equal(recovered[name], reference[name])]
    assert not differ


def test_training_duration_counts_the_time_before_the_checkpoint(tmp_path, monkeypatch):
    """After `--recover`, `training_duration` is the training time up to the checkpoint plus this
    process's after it (the replay of the skipped batches not counted), in the epoch's metrics and
    in the next checkpoint; a run never stopped keeps AllenNLP's own figure."""
    from elmo_plugin.training import exact_recovery

    now = [1000.0]
    monkeypatch.setattr(exact_recovery, "monotonic", lambda: now[0])
    first = exact_recovery.ExactRecovery(str(tmp_path / "first"))
    first.on_start(a_trainer(2))
    now[0] = 1600.0  # killed after 600 s, with a checkpoint before any batch of epoch 0
    torch.save(first.state_dict(), tmp_path / "state.th")

    (tmp_path / "second").mkdir()
    second = exact_recovery.ExactRecovery(str(tmp_path / "second"))
    resumed = a_trainer(2)
    now[0] = 5000.0
    second.on_start(resumed)
    second.load_state_dict(torch.load(tmp_path / "state.th"))
    replay = iter(resumed.data_loader)
    now[0] = 5200.0  # 200 s of replaying before the first batch after the checkpoint
    assert list(replay) == [{"batch": 1}, {"batch": 2}]
    now[0] = 5500.0
    metrics = {"training_duration": "0:05:00"}  # AllenNLP's: this process only
    second.on_epoch(resumed, metrics=metrics, epoch=0)
    assert metrics["training_duration"] == "0:15:00"  # 600 s before, 300 s after
    written = json.loads((tmp_path / "second" / "metrics_epoch_0.json").read_text())
    assert written["training_duration"] == "0:15:00"
    now[0] = 5600.0
    assert second.state_dict()["elapsed"] == pytest.approx(1000.0)  # a second --recover adds on

    (tmp_path / "plain").mkdir()
    plain = exact_recovery.ExactRecovery(str(tmp_path / "plain"))
    plain.on_start(a_trainer(2))
    metrics = {"training_duration": "0:05:00"}
    plain.on_epoch(plain.trainer, metrics=metrics, epoch=0)
    assert metrics["training_duration"] == "0:05:00"
    assert not (tmp_path / "plain" / "metrics_epoch_0.json").exists()


def a_trainer(batches: int) -> SimpleNamespace:
    """What the callback reads of a trainer: its loader (`batches` batches) and its model."""
    loader = [{"batch": k} for k in range(1, batches + 1)]
    return SimpleNamespace(data_loader=loader, model=torch.nn.Linear(2, 2))


def test_the_running_loss_after_recover_counts_the_batches_before_the_checkpoint(tmp_path):
    """AllenNLP's progress bar shows the running `loss` of the dict the callbacks get, which after
    `--recover` sums only the batches since the restart; the callback corrects it in place."""
    from elmo_plugin.training.exact_recovery import ExactRecovery

    first = ExactRecovery(str(tmp_path))
    first.on_start(a_trainer(5))
    for batch, running in enumerate([4.0, 7.0 / 2, 10.0 / 3], start=1):  # batch losses 4, 3, 3
        shown = {"loss": running}
        first.on_batch(first.trainer, [], [], shown, epoch=0, batch_number=batch, is_training=True)
        assert shown == {"loss": running}  # a run never stopped: AllenNLP's own figure
    state = first.state_dict()  # the checkpoint after batch 3

    second = ExactRecovery(str(tmp_path))
    resumed = a_trainer(5)
    second.on_start(resumed)
    second.load_state_dict(state)
    replay = iter(resumed.data_loader)
    assert next(replay) == {"batch": 1}  # batches 1-3 are replayed, then the state comes back
    assert [next(replay) for _ in range(3)] == [{"batch": 2}, {"batch": 3}, {"batch": 4}]
    shown = {"loss": 2.0 / 4}  # batch 4's loss 2 over the epoch's 4 batches
    second.on_batch(resumed, [], [], shown, epoch=0, batch_number=4, is_training=True)
    assert shown["loss"] == pytest.approx(12.0 / 4)
