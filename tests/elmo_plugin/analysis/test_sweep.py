import json
import os

import pytest
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader

from elmo_bilm.utils.files import FormatError
from elmo_plugin.analysis import sweep
from elmo_plugin.analysis.layer_weights import mix_weights
from elmo_plugin.commands.analysis import ElmoLayerWeights, ElmoSweep
from tests.conftest import REPO_ROOT
from tests.elmo_plugin.analysis.conftest import run_command, run_with_log

NER = str(REPO_ROOT / "training_config" / "conll2003_crf_tagger_elmo.jsonnet")
TINY = str(REPO_ROOT / "fixtures" / "conll2003" / "tiny.txt")


def subset(fraction, seed):
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "elmo_plugin_subset",
                "reader": {"type": "elmo_plugin_conll2003"},
                "fraction": fraction,
                "seed": seed,
            }
        )
    )
    return [" ".join(t.text for t in i["tokens"].tokens) for i in reader.read(TINY)]


def test_seeded_subset_is_the_same_for_a_seed_and_differs_for_another():
    everything = subset(1.0, 0)
    half = subset(0.5, 1)
    assert half == subset(0.5, 1) and half != subset(0.5, 2)
    assert len(half) == round(len(everything) / 2) and set(half) < set(everything)
    assert half == [s for s in everything if s in set(half)]  # original order


def test_grid_and_run_configs(tmp_path):
    runs = sweep.grid(["none", "input"], [0.1, 0.001], [None], [None], [0.5, 1.0], [1, 2])
    assert len(runs) == 4 + 8  # the baseline once per fraction and seed

    def evaluated(run):
        config = tmp_path / f"{run.name}.jsonnet"
        config.write_text(sweep.run_config(NER, run))
        return Params.from_file(str(config)).as_dict()

    elmo = evaluated(sweep.Run("both", 0.001, "top", False, 0.5, 7))
    embedder = elmo["model"]["text_field_embedder"]
    assert (embedder["placement"], embedder["l2_coefficient"]) == ("both", 0.001)
    assert (embedder["layers"], embedder["gamma"]) == ("top", False)
    assert embedder["do_layer_norm"] is False  # the config's own default stays
    assert (
        elmo["random_seed"] == 7 and elmo["model"]["encoder"]["type"] == "elmo_plugin_output_elmo"
    )
    reader = elmo["dataset_reader"]
    assert (reader["type"], reader["fraction"], reader["seed"]) == ("elmo_plugin_subset", 0.5, 7)
    baseline = evaluated(sweep.Run("none", None, None, None, 1.0, 3))
    assert baseline["random_seed"] == 3 and "type" not in baseline["model"]["text_field_embedder"]
    assert "elmo" not in baseline["dataset_reader"]["token_indexers"]
    names = [sweep.label(run.group) for run in runs if run.seed == 1]
    assert "placement=none,fraction=0.5" in names
    assert "placement=input,lambda=0.001,fraction=1.0" in names  # the config's own: left out
    with pytest.raises(FormatError, match="a sweep takes a task's `_elmo.jsonnet` config"):
        sweep.run_config(NER.replace("_elmo", ""), runs[0])


def test_fraction_runs_can_take_a_fixed_number_of_batches_per_epoch(tmp_path):
    def loader(run):
        config = tmp_path / f"{run.name}.jsonnet"
        config.write_text(sweep.run_config(NER, run, fraction_batches_per_epoch=50))
        return Params.from_file(str(config)).as_dict()["data_loader"]

    small = loader(sweep.Run("input", None, None, None, 0.01, 1))
    assert small["batches_per_epoch"] == 50
    assert (
        small["batch_sampler"]
        == loader(sweep.Run("input", None, None, None, 1.0, 1))["batch_sampler"]
    )  # the config's own loader settings stay
    assert "batches_per_epoch" not in loader(sweep.Run("none", None, None, None, 1.0, 1))
    with pytest.raises(ValueError, match="batches per epoch must be positive"):
        next(sweep.sweep(NER, str(tmp_path), [], fraction_batches_per_epoch=0))


@pytest.mark.slow  # trains four tiny models in subprocesses
def test_sweep_trains_resumes_and_reports(tmp_path, monkeypatch):
    monkeypatch.setenv("CONLL2003_TRAIN", TINY)
    monkeypatch.setenv("CONLL2003_DEV", TINY)
    monkeypatch.setenv("CONLL2003_TEST", TINY)
    out = tmp_path / "sweep"
    argv = [
        "elmo-sweep",
        NER,
        "-s",
        str(out),
        "--placement",
        "none",
        "input",
        "--fraction",
        "0.5",
        "1.0",
    ]
    argv += ["--seeds", "1", "--overrides", json.dumps({"trainer.num_epochs": 1})]
    run_command(ElmoSweep, argv)
    result = json.loads((out / "sweep.json").read_text())
    assert len(result["runs"]) == 4 and result["metric"] == "f1-measure-overall"
    assert all(r["test"] is not None and r["best_dev"] is not None for r in result["runs"])
    table = (out / "sweep.md").read_text()
    assert (out / "sweep.png").exists() and "| placement=input,fraction=0.5 | 1 |" in table
    stamps = {p: os.path.getmtime(p) for p in out.glob("*/metrics.json")}
    run_command(ElmoSweep, argv)  # resumes: nothing is trained again
    assert stamps == {p: os.path.getmtime(p) for p in out.glob("*/metrics.json")}
    # a re-run on part of the grid keeps the other rows in sweep.json
    part = [a if a != "input" else "none" for a in argv]
    run_command(ElmoSweep, part)
    assert len(json.loads((out / "sweep.json").read_text())["runs"]) == 4

    # Figure 2 of the trained ELMo model
    archive = (
        out
        / "placement=input,lambda=None,layers=None,gamma=None,fraction=1.0,seed=1"
        / "model.tar.gz"
    )
    argv = ["elmo-layer-weights", str(archive), "--output-dir", str(tmp_path / "w")]
    run_command(ElmoLayerWeights, argv + ["--labels", "NER"])
    weights = json.loads((tmp_path / "w" / "layer_weights.json").read_text())
    mixes = weights["NER"]
    assert len(mixes) == 1 and sum(mixes[0]["weights"]) == pytest.approx(1.0)
    assert mixes[0]["placement"] == "input"
    assert (tmp_path / "w" / "layer_weights.png").exists()
    with pytest.raises(SystemExit, match="elmo-layer-weights: error: 2 --labels for 1 archives"):
        run_command(ElmoLayerWeights, argv + ["--labels", "NER", "SST", "--overwrite"])
    with pytest.raises(SystemExit, match="elmo-layer-weights: error: .*no such archive"):
        run_command(
            ElmoLayerWeights,
            ["elmo-layer-weights", str(tmp_path / "x.tar.gz"), "--output-dir", str(tmp_path)],
        )
    assert mix_weights(torch.nn.Linear(1, 1)) == []


def test_wall_time_sums_each_invocation_of_a_resumed_run(tmp_path):
    run_dir = tmp_path / "placement=none,fraction=1.0,seed=1"
    assert sweep.wall_time(run_dir) is None  # no log: unknown, not zero
    line = "2026-11-24 {} - INFO - allennlp.{} - {}\n"
    run_dir.with_name(f"{run_dir.name}.log").write_text(
        line.format("02:00:00,100", "common.plugins", "Plugin allennlp_models available")
        + line.format("02:05:00,000", "training.trainer", "Epoch 0/9")
        + "  0%|          | 0/9 [00:00<?, ?it/s]"  # a progress bar, then a stamp mid-line
        + line.format("02:30:00,000", "training.trainer", "Epoch 1/9")
        + "Traceback (most recent call last): killed\n"
        # the kill's 30 minutes until the resume are not training
        + line.format("03:00:00,000", "common.plugins", "Plugin allennlp_models available")
        + line.format("03:00:05,000", "training.util", "Recovering from prior training")
        + line.format("03:20:00,000", "models.archival", "archiving weights")
    )
    assert sweep.wall_time(run_dir) == 30 * 60 + 20 * 60


def test_fractions_outside_zero_one_are_refused():
    from elmo_plugin.analysis.sweep import grid

    with pytest.raises(ValueError, match=r"in \(0, 1\], got \[2.5\]"):
        grid([None], [None], [None], [None], [2.5], [1])


def test_a_run_that_failed_on_bad_data_says_why_and_trains_once_the_data_is_fixed(
    tmp_path, monkeypatch
):
    bad = tmp_path / "bad.txt"
    bad.write_text("EU NNP I-NP\n")
    for split in ("TRAIN", "DEV", "TEST"):
        monkeypatch.setenv(f"CONLL2003_{split}", str(bad))
    argv = ["elmo-sweep", NER, "-s", str(tmp_path / "s"), "--placement", "none", "--seeds", "1"]
    argv += ["--overrides", json.dumps({"trainer.num_epochs": 1})]
    with pytest.raises(RuntimeError, match="expected 4 columns"):
        run_command(ElmoSweep, argv)
    for split in ("TRAIN", "DEV", "TEST"):
        monkeypatch.setenv(f"CONLL2003_{split}", TINY)
    run_command(ElmoSweep, argv)  # the failed run's folder held no checkpoint: trained afresh
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["runs"][0]["test"] is not None


def test_eta_counts_each_grid_point_by_its_own_finished_runs(tmp_path):
    """A sweep's fractions differ in length: a 10% run is judged by the 10% runs, not the mean."""
    run_with_log(tmp_path, "placement=none,fraction=0.1,seed=1", 6, finished=True)
    run_with_log(tmp_path, "placement=none,fraction=1.0,seed=1", 50, finished=True)
    done = [log.with_suffix("") for log in tmp_path.glob("*.log")]
    todo = [tmp_path / "placement=none,fraction=0.1,seed=2", tmp_path / "placement=input,seed=1"]
    left = sweep.seconds_left(todo, done, sweep.group_key)
    assert left == [6 * 60.0, 28 * 60.0]  # its grid point's 6 minutes; a new point: the mean


def test_figure_1_labels_its_axes_and_lines_for_a_reader():
    summary = json.loads((REPO_ROOT / "docs" / "section5" / "figure1_ner.json").read_text())
    figure = sweep.figure_1(summary["summary"], summary["metric"])
    (axis,) = figure.axes
    assert axis.get_ylabel() == "test F1 (labelled spans)"
    figure.canvas.draw()
    low, high = axis.get_xlim()
    ticks = zip(axis.get_xticks(), axis.get_xticklabels())
    assert [text.get_text() for value, text in ticks if low <= value <= high] == ["1", "10", "100"]
    legend = sorted(t.get_text() for t in axis.get_legend().get_texts())
    assert legend == ["+ ELMo at the input", "baseline (no ELMo)"]
    assert sweep.metric_label("accuracy") == "test accuracy"
    assert sweep.metric_label("some_new-metric") == "test some new metric"
