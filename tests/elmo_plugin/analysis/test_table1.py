"""`elmo-table1`: the grid, resume, the report's schema and arithmetic (training stubbed: the real
runs are `allennlp train`, tested by the sweep's tests)."""

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from scipy import stats

from elmo_plugin.analysis import report, sweep, table1
from elmo_plugin.commands.elmo_table1 import ElmoTable1
from tests.conftest import REPO_ROOT
from tests.elmo_plugin.analysis.conftest import run_command, run_with_log

TINY_SST = str(REPO_ROOT / "fixtures" / "sst" / "tiny.txt")
# test metric per (row, seed): baseline 40 / 42, + ELMo 46 / 48 (accuracy, as fractions)
TEST = {("none", 1): 0.40, ("none", 2): 0.42, ("config", 1): 0.46, ("config", 2): 0.48}


class FakeTraining:
    """Writes what a finished `allennlp train` leaves: config.json, metrics.json, model.tar.gz."""

    def __init__(self, archive: bool = True) -> None:
        self.calls = []
        self.archive = archive

    def __call__(self, run_dir: Path, config_text: str, overrides, env=None):
        self.calls.append(run_dir.name)
        run_dir.mkdir(parents=True, exist_ok=True)
        placement = run_dir.name.split(",")[0].split("=")[1]
        seed = int(run_dir.name.rsplit("seed=", 1)[1])
        config = {
            "dataset_reader": {"type": "elmo_plugin_sst", "granularity": "5-class"},
            "train_data_path": TINY_SST,
            "trainer": {"validation_metric": "+accuracy"},
        }
        (run_dir / "config.json").write_text(json.dumps(config))
        metrics = {"best_validation_accuracy": 0.5, "test_accuracy": TEST[(placement, seed)]}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        log = "2026-11-24 10:{:02d}:00,000 - INFO - allennlp.common.plugins - Plugin {}\n"
        log = log.format(0, "allennlp_models available") + log.format(10, "elmo_plugin available")
        run_dir.with_name(f"{run_dir.name}.log").write_text(log)  # 10 minutes of training
        if self.archive:
            with tarfile.open(run_dir / "model.tar.gz", "w:gz") as tar:
                tar.add(run_dir / "config.json", arcname="config.json")
        assert json.loads(overrides)["trainer.num_epochs"] == 12  # the cpu scale's overrides
        assert '"elmo_plugin_subset"' not in config_text  # SST at the cpu scale: the whole set
        # both rows read the word vectors, passed (the tests' own calls pass no config text)
        assert not config_text or "pretrained_word_vectors=true" in config_text


def test_a_cuda_device_reaches_every_run_and_the_cpu_default_adds_nothing(tmp_path):
    seen = []

    def training(run_dir: Path, config_text: str, overrides, env=None) -> None:
        seen.append(json.loads(overrides))
        FakeTraining()(run_dir, config_text, overrides)

    table1.run_table(str(tmp_path / "gpu"), "cpu", [1], ["sst"], train_run=training, cuda_device=0)
    table1.run_table(str(tmp_path / "cpu"), "cpu", [1], ["sst"], train_run=training)
    assert [o.get("trainer.cuda_device") for o in seen] == [0, 0, None, None]
    assert all(o["trainer.num_epochs"] == 12 for o in seen)  # the scale's overrides kept


def test_compare_elmo_with_another_table_gives_welchs_test_per_task(tmp_path):
    """+ ELMo here (46 / 48) against + ELMo of another table (e.g. another biLM: 40 / 41 / 45)."""
    out = tmp_path / "t1"
    table1.run_table(str(out), "cpu", [1, 2], ["sst"], train_run=FakeTraining())
    other = tmp_path / "other.json"
    runs = [{"placement": None, "seed": s, "test": v} for s, v in ((1, 0.40), (2, 0.41), (3, 0.45))]
    runs.append({"placement": "none", "seed": 1, "test": 0.10})  # a baseline: not compared
    other.write_text(json.dumps({"runs": {"sst": runs, "ner": runs}}))
    argv = ["elmo-table1", "-s", str(out), "--seeds", "1", "2", "--no-train"]
    run_command(ElmoTable1, argv + ["--compare-elmo-with", str(other)])
    result = json.loads((out / "table1.json").read_text())
    (row,) = result["elmo_comparison"]  # no ner row: no + ELMo run of ner here
    assert (row["task"], row["elmo_seeds"], row["other_seeds"]) == ("sst", 2, 3)
    assert row["difference"] == pytest.approx(47.0 - 42.0)
    # Welch's test by hand: unequal variances (2 and 7), Welch-Satterthwaite degrees of freedom
    se2 = 2.0 / 2 + 7.0 / 3
    df = se2**2 / ((2.0 / 2) ** 2 / 1 + (7.0 / 3) ** 2 / 2)
    t = 5.0 / se2**0.5
    assert row["welch_p"] == pytest.approx(2 * stats.t.sf(t, df), rel=1e-6)
    assert result["elmo_compared_with"] == str(other)
    assert f"+ ELMo of `{other}`" in (out / "table1.md").read_text()
    with pytest.raises(SystemExit, match="--compare-elmo-with .*nope.json: no such file"):
        run_command(ElmoTable1, argv + ["--compare-elmo-with", str(tmp_path / "nope.json")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": ')
    with pytest.raises(SystemExit, match="bad.json, line 1: not a table1.json"):
        run_command(ElmoTable1, argv + ["--compare-elmo-with", str(bad)])
    bad.write_text('{"table": []}')
    with pytest.raises(SystemExit, match='bad.json: no "runs" object, not a table1.json'):
        run_command(ElmoTable1, argv + ["--compare-elmo-with", str(bad)])


def test_grid_resume_and_report(tmp_path):
    out = str(tmp_path / "t1")
    # a run killed while archiving (metrics.json written, no model.tar.gz) is not finished
    FakeTraining(archive=False)(
        Path(out) / "sst" / "placement=none,fraction=1.0,seed=1", "", '{"trainer.num_epochs": 12}'
    )
    training = FakeTraining()
    result = table1.run_table(out, "cpu", [1, 2], ["sst"], train_run=training)
    names = [run.name for run in table1.runs([1, 2], 1.0)]
    assert len(names) == 4 and sorted(training.calls) == sorted(names)
    (row,) = result["table"]
    assert row["task"] == "sst" and row["metric"] == "accuracy" and row["train_size"] == 6
    assert row["baseline_mean"] == pytest.approx(41.0) and row["elmo_mean"] == pytest.approx(47.0)
    assert row["baseline_std"] == pytest.approx(2**0.5) and row["increase"] == pytest.approx(6.0)
    assert row["error_reduction"] == pytest.approx(100 * 6.0 / 59.0)  # (47 - 41) / (100 - 41)
    assert row["beyond_two_std"] is True  # 6 > 2 * 1.414
    assert row["paper_error_reduction"] == pytest.approx(100 * 3.3 / 48.6)  # 51.4 -> 54.7
    assert result["scales"]["sst"]["overrides"]["dataset_reader.use_subtrees"] is False
    assert row["wall_time_s"] == result["wall_time_s"] == 4 * 600.0  # four runs of 10 minutes
    # resumed: nothing trained again; a wider seed list trains only the new seed
    again = FakeTraining()
    table1.run_table(out, "cpu", [1, 2], ["sst"], train_run=again)
    assert again.calls == []
    # the markdown and the plot
    paths = report.write_report(
        out,
        "table1",
        result,
        table1.markdown(result["table"], "cpu", result["runs"]),
        table1.figure(result["table"]),
        overwrite=True,
    )
    assert [Path(p).name for p in paths] == ["table1.json", "table1.md", "table1.png"]
    text = Path(out, "table1.md").read_text()
    row = "| sst | accuracy | 6 | 41.00 +/- 1.41 | 47.00 +/- 1.41 | +6.00 / 10.2% | yes | 2 / 2 |"
    assert row + " 51.40 | 54.70 | +3.30 / 6.8% |" in text
    assert "| sst | + ELMo | 2 | 50.00 | 48.00 | - | 10 |" in text  # every run, in percent
    assert "Training time of the 4 runs, one after another: 0.7 h" in text


def test_other_tasks_finished_runs_stay_in_the_report(tmp_path):
    out = str(tmp_path / "t1")
    table1.run_table(out, "cpu", [1], ["sst"], train_run=FakeTraining())
    (Path(out) / "ner").mkdir()
    result = table1.collect(out, "cpu", [1])
    assert [row["task"] for row in result["table"]] == ["sst"]  # ner has no finished run
    assert result["table"][0]["baseline_std"] is None  # one seed: no spread
    assert result["table"][0]["beyond_two_std"] is None  # so the target cannot be judged
    assert "| +6.00 / 10.0% | - | 1 / 1 |" in table1.markdown(result["table"], "cpu")


def test_no_train_tabulates_the_finished_runs_and_trains_nothing(tmp_path):
    out = tmp_path / "t1"
    table1.run_table(str(out), "cpu", [1], ["sst"], rows=["baseline"], train_run=FakeTraining())
    argv = ["elmo-table1", "-s", str(out), "--seeds", "1", "2", "--no-train"]
    run_command(ElmoTable1, argv + ["--output-dir", str(tmp_path / "report")])
    (row,) = json.loads((tmp_path / "report" / "table1.json").read_text())["table"]
    assert (row["baseline_seeds"], row["elmo_seeds"]) == (1, 0)  # seed 2 and + ELMo not trained
    assert sorted(p.name for p in (out / "sst").iterdir() if p.is_dir()) == [
        "placement=none,fraction=1.0,seed=1"
    ]


def test_baselines_from_another_table(tmp_path):
    """+ ELMo with another biLM (its own folder, --rows elmo) against the main table's baselines."""
    main, other = tmp_path / "t1", tmp_path / "t1_1024"
    table1.run_table(str(main), "cpu", [1, 2], ["sst"], train_run=FakeTraining())
    ner_baseline = table1.runs([1], table1.SCALES["cpu"]["ner"].fraction)[0].name
    FakeTraining()(main / "ner" / ner_baseline, "", '{"trainer.num_epochs": 12}')
    argv = ["elmo-table1", "-s", str(other), "--seeds", "1", "2", "--baselines-from", str(main)]
    with pytest.raises(SystemExit, match="elmo-table1: error: .*--rows elmo"):  # would train
        run_command(ElmoTable1, argv)  # baselines nobody reads
    training = FakeTraining()
    table1.run_table(str(other), "cpu", [1], ["sst"], rows=["elmo"], train_run=training)
    assert training.calls == [table1.runs([1], 1.0)[1].name]  # + ELMo, seed 1 only
    run_command(ElmoTable1, argv + ["--no-train"])
    result = json.loads((other / "table1.json").read_text())
    (row,) = result["table"]  # no ner row: no + ELMo run of ner in `other`
    assert (row["baseline_seeds"], row["elmo_seeds"]) == (2, 1)
    assert row["baseline_mean"] == pytest.approx(41.0) and row["elmo_mean"] == pytest.approx(46.0)
    assert result["baselines_from"] == str(main)
    assert f"baseline runs from `{main}`" in (other / "table1.md").read_text()
    assert not (other / "sst" / "placement=none,fraction=1.0,seed=1").exists()
    # the main table's table1.json stands in for its folder (run folders gone, records kept)
    run_command(ElmoTable1, ["elmo-table1", "-s", str(main), "--seeds", "1", "2", "--no-train"])
    saved = tmp_path / "main_table1.json"
    saved.write_text((main / "table1.json").read_text())
    shutil.rmtree(main)
    argv[argv.index(str(main))] = str(saved)
    run_command(ElmoTable1, argv + ["--no-train", "--output-dir", str(tmp_path / "from_json")])
    again = json.loads((tmp_path / "from_json" / "table1.json").read_text())
    assert again["table"] == result["table"] and again["runs"] == result["runs"]


def test_runs_from_an_earlier_table_count_and_are_not_trained_again(tmp_path):
    """Seed 1 made on a machine whose folders are gone (its table1.json kept), seed 2 here."""
    first = tmp_path / "first"
    saved = tmp_path / "first_table1.json"
    saved.write_text(
        json.dumps(table1.run_table(str(first), "cpu", [1], ["sst"], train_run=FakeTraining()))
    )
    shutil.rmtree(first)
    out = tmp_path / "again"
    training = FakeTraining()
    result = table1.run_table(
        str(out), "cpu", [1, 2], ["sst"], train_run=training, runs_from=[str(saved)]
    )
    assert sorted(training.calls) == sorted(run.name for run in table1.runs([2], 1.0))
    (row,) = result["table"]
    assert (row["baseline_seeds"], row["elmo_seeds"]) == (2, 2)
    assert row["baseline_mean"] == pytest.approx(41.0) and row["elmo_mean"] == pytest.approx(47.0)
    assert row["train_size"] == 6
    sources = [(r["placement"], r["seed"], r.get("from")) for r in result["runs"]["sst"]]
    assert sources == [
        ("none", 1, str(saved)),
        ("none", 2, None),
        (None, 1, str(saved)),
        (None, 2, None),
    ]
    # tabulated from the file alone (no folder of this table on this machine)
    argv = ["elmo-table1", "-s", str(tmp_path / "none"), "--seeds", "1", "--no-train"]
    run_command(ElmoTable1, argv + ["--runs-from", str(saved), "--output-dir", str(out / "r")])
    (row,) = json.loads((out / "r" / "table1.json").read_text())["table"]
    assert (row["baseline_seeds"], row["elmo_seeds"], row["increase"]) == (1, 1, pytest.approx(6))
    with pytest.raises(SystemExit, match="--runs-from .*nope.json: no such file"):
        run_command(ElmoTable1, argv + ["--runs-from", str(tmp_path / "nope.json")])


def test_eta_is_the_finished_runs_training_times(tmp_path):
    base, elmo = (table1.runs([2], 1.0)[i].name for i in (0, 1))
    assert base.startswith("placement=none,") and elmo.startswith("placement=config,")
    todo = [tmp_path / "sst" / base, tmp_path / "sst" / elmo, tmp_path / "srl" / base]
    # nothing finished: no estimate (tqdm's own ETA)
    assert sweep.seconds_left(todo, [], table1.run_keys) == [None, None, None]
    run_with_log(tmp_path / "sst", "placement=none,fraction=1.0,seed=1", 20, finished=True)
    run_with_log(tmp_path / "sst", "placement=none,fraction=1.0,seed=3", 40, finished=True)
    run_with_log(tmp_path / "ner", "placement=none,fraction=1.0,seed=1", 50, finished=True)
    run_with_log(tmp_path / "sst", elmo, 5, finished=False)  # interrupted after 5 minutes
    done = [log.with_suffix("") for log in tmp_path.glob("*/*.log")]
    left = sweep.seconds_left(todo, done, table1.run_keys)
    # sst baseline: its row's mean (30 min); sst + ELMo: no finished run of its row, so the
    # task's mean (30 min) less the 5 spent; srl: no finished srl run, and ner's 50 minutes say
    # nothing of srl's length, so no estimate
    assert left == [30 * 60.0, 25 * 60.0, None]


def test_progress_counts_the_runs_it_cannot_time(tmp_path):
    run_with_log(tmp_path / "sst", "placement=none,fraction=1.0,seed=1", 30, finished=True)
    done = [log.with_suffix("") for log in tmp_path.glob("*/*.log")]
    base = table1.runs([2], 1.0)[0].name
    todo = [tmp_path / "sst" / base, tmp_path / "srl" / base, tmp_path / "ner" / base]
    progress = sweep.Progress("t", todo, done, table1.run_keys)
    assert progress.eta() == ", about 0.5 h of training left + 2 runs not timed yet"
    progress.finish(todo[0])
    assert progress.eta() == ", about 0.0 h of training left + 2 runs not timed yet"
    progress.close()
    # nothing finished: tqdm's own rate, no estimate
    assert sweep.Progress("t", todo, [], table1.run_keys).eta() == ""


def test_unknown_task_and_scale_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown task"):
        table1.run_table(str(tmp_path), "cpu", [1], ["pos"])
    with pytest.raises(ValueError, match="unknown scale"):
        table1.run_table(str(tmp_path), "gpu", [1], ["sst"])


def test_rows_option_trains_only_the_rows_asked_for(tmp_path):
    training = FakeTraining()
    table1.run_table(str(tmp_path / "t1"), "cpu", [1], ["sst"], rows=["elmo"], train_run=training)
    assert len(training.calls) == 1 and training.calls[0].startswith("placement=config")


def test_figure_legend_names_each_row_once_whichever_task_has_it():
    """The first task may have no + ELMo run yet: the legend still names it (and only once)."""
    row = {
        "task": "squad",
        "metric": "F1",
        "baseline_mean": 40.0,
        "baseline_std": None,
        "elmo_mean": None,
        "elmo_std": None,
        "paper_baseline": 81.1,
        "paper_elmo": 85.8,
    }
    second = {**row, "task": "snli", "elmo_mean": 60.0, "paper_baseline": 88.0, "paper_elmo": 88.7}
    figure = table1.figure([row, second])
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert sorted(labels) == ["+ ELMo", "baseline", "paper"]


def test_cpu_scale_trains_srl_at_batch_16_on_a_tenth(tmp_path):
    """The SRL departure of the `cpu` scale (batch 16, 20 epochs) reaches every run."""
    seen = []

    def record(run_dir: Path, config_text: str, overrides, env=None):
        seen.append((run_dir.name, json.loads(overrides)))
        run_dir.mkdir(parents=True)  # what the sweep reads back after a run
        metrics = {"best_validation_f1-measure-overall": 0.5, "test_f1-measure-overall": 0.4}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        config = {"trainer": {"validation_metric": "+f1-measure-overall"}}
        (run_dir / "config.json").write_text(json.dumps(config))

    table1.run_table(str(tmp_path / "t1"), "cpu", [1], ["srl"], train_run=record)
    assert [name for name, _ in seen] == [
        "placement=none,fraction=0.1,seed=1",
        "placement=config,lambda=None,layers=None,gamma=None,fraction=0.1,seed=1",
    ]
    for _, overrides in seen:
        assert overrides["data_loader.batch_sampler.batch_size"] == 16
        assert overrides["trainer.num_epochs"] == 20 and overrides["trainer.patience"] == 5


@pytest.mark.parametrize("made", [False, True])
def test_tabulating_nothing_is_an_error_and_writes_nothing(tmp_path, made):
    """`-s TYPO --no-train`: one line naming the folder, exit status 1, no folder or table made."""
    folder = tmp_path / "typo"
    if made:
        folder.mkdir()  # a folder without runs
    with pytest.raises(SystemExit, match="elmo-table1: error: .*typo: no") as error:
        run_command(ElmoTable1, ["elmo-table1", "-s", str(folder), "--no-train"])
    assert "\n" not in str(error.value)
    assert folder.exists() == made and not list(tmp_path.glob("**/table1.*"))


@pytest.mark.parametrize("scale", sorted(table1.SCALES))
def test_every_scale_overrides_keys_the_configs_have(scale):
    """AllenNLP's overrides add a key a config lacks, so a misspelt cap would be ignored
    silently; every scale's override must name a key both rows' configs already have."""
    from allennlp.common import Params

    from elmo_plugin.common.config_env import CONFIG_DIR

    for task, spec in table1.SCALES[scale].items():
        elmo_config = CONFIG_DIR / table1.TASKS[task].config
        for config in (elmo_config, Path(sweep.baseline_config(str(elmo_config)))):
            keys = Params.from_file(str(config)).as_flat_dict()
            assert set(spec.overrides) <= set(keys), (scale, task, config.name)
    long, cpu = table1.SCALES["cpu_long"], table1.SCALES["cpu"]
    raised = {t for t in cpu if long[t] != cpu[t]}
    assert raised == {"squad", "snli", "coref"}
    for task in raised:  # only the epoch cap (and SQuAD's patience) moves
        assert long[task].overrides["trainer.num_epochs"] > 8
        assert {k: v for k, v in long[task].overrides.items() if "trainer" not in k} == {
            k: v for k, v in cpu[task].overrides.items() if "trainer" not in k
        }


def test_the_cpu_long_scale_reaches_the_runs_it_raises(tmp_path):
    """`--scale cpu_long` trains SNLI with its 24-epoch cap and SQuAD with 26 epochs, patience 3
    (the `cpu` scale passes SNLI's 8, 4 and 2 for SQuAD)."""
    passed = []

    def training(run_dir: Path, config_text: str, overrides, env=None):
        passed.append(json.loads(overrides) if overrides else {})
        raise KeyboardInterrupt  # stop after the first run: only its arguments matter here

    for scale in ("cpu_long", "cpu"):
        for task in ("snli", "squad"):
            with pytest.raises(KeyboardInterrupt):
                table1.run_table(str(tmp_path / scale), scale, [1], [task], train_run=training)
    assert passed == [
        {"trainer.num_epochs": 24},
        {"trainer.num_epochs": 26, "trainer.patience": 3},
        {"trainer.num_epochs": 8},
        {"trainer.num_epochs": 4, "trainer.patience": 2},
    ]


def test_the_cuda_device_option_reaches_run_table(tmp_path, monkeypatch):
    import argparse

    from elmo_plugin.commands import elmo_table1

    seen = {}

    def fake_run_table(*args, **kwargs):
        seen.update(kwargs)
        return {"table": [], "runs": {}}

    monkeypatch.setattr(table1, "run_table", fake_run_table)
    monkeypatch.setattr(table1, "markdown", lambda *a, **k: "")
    monkeypatch.setattr(report, "write_report", lambda *a, **k: [])
    parser = argparse.ArgumentParser()
    ElmoTable1().add_subparser(parser.add_subparsers())
    args = parser.parse_args(
        ["elmo-table1", "-s", str(tmp_path / "t"), "--tasks", "sst", "--cuda-device", "0"]
    )
    monkeypatch.setenv("SST_WORD_VECTORS", "")
    elmo_table1._run(args)
    assert seen["cuda_device"] == 0
