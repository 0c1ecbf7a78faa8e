"""Table 1: ELMo added to the six task baselines, each trained over seeds, at a named scale.

The grid is six tasks x {baseline, + ELMo (the config's paper placement)} x seeds; every run is an
`elmo-sweep` run (its own `allennlp train`, resumed with `--recover`, skipped once its archive
and metrics are written), so an interrupted table continues where it stopped.
"""

import json
import math
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from elmo_bilm.utils.files import UsageError
from elmo_plugin.analysis import sweep
from elmo_plugin.common.config_env import CONFIG_DIR


@dataclass(frozen=True)
class Task:
    """One row: the `_elmo` config (its baseline is the sibling without `_elmo`), the metric's
    name, the paper's Table 1 baseline and + ELMo test figures, and the variable naming the
    config's word vectors."""

    config: str
    metric: str
    paper_baseline: float
    paper_elmo: float
    word_vectors: str


TASKS: Dict[str, Task] = {
    "squad": Task("squad_bidaf_selfattn_elmo.jsonnet", "F1", 81.1, 85.8, "SQUAD_WORD_VECTORS"),
    "snli": Task("snli_esim_elmo.jsonnet", "accuracy", 88.0, 88.7, "SNLI_WORD_VECTORS"),
    "srl": Task("srl_he2017_elmo.jsonnet", "F1", 81.4, 84.6, "SRL_WORD_VECTORS"),
    "coref": Task("coref_lee2017_elmo.jsonnet", "average F1", 67.2, 70.4, "COREF_WORD_VECTORS"),
    "ner": Task("conll2003_crf_tagger_elmo.jsonnet", "F1", 90.15, 92.22, "CONLL2003_WORD_VECTORS"),
    "sst": Task("sst_bcn_elmo.jsonnet", "accuracy", 51.4, 54.7, "SST_WORD_VECTORS"),
}


@dataclass(frozen=True)
class Scale:
    """How one task trains at a scale: a fixed seeded `fraction` of its training data (the
    same subset for every seed and for both rows, so that only the model differs) and
    `overrides` of its config (epoch caps, patience)."""

    fraction: float = 1.0
    overrides: Dict[str, Any] = field(default_factory=dict)
    fraction_batches_per_epoch: Optional[int] = None
    # data variables the scale sets for its runs' `allennlp train` processes, over the environment
    # (the `smoke` slices; this process's `os.environ` is left as it is)
    data: Dict[str, str] = field(default_factory=dict)


# `cpu`: subsets and epoch caps sized for one CPU core a run, on the data the configs default to;
# `cpu_long`: the same, with the epoch caps raised where the `cpu` caps bound, so that patience
# ends those runs; `full`: the configs as they are, on whatever the data variables name. The
# measured reasons for each scale's sizes are in docs/table1.md ("Scales").
_CPU: Dict[str, Scale] = {
    "squad": Scale(overrides={"trainer.num_epochs": 4, "trainer.patience": 2}),
    # trains on SNLI dev for at most 8 epochs (the headline's setting, passed: no data path sets it)
    "snli": Scale(overrides={"trainer.num_epochs": 8}),
    # a smaller batch than He et al.'s: on 10% of the predicates their batch gives too few
    # updates an epoch to learn anything before patience stops the run (docs/table1.md)
    "srl": Scale(
        fraction=0.1,
        overrides={
            "data_loader.batch_sampler.batch_size": 16,
            "trainer.num_epochs": 20,
            "trainer.patience": 5,
        },
    ),
    # fewer antecedents than Lee et al.: the pairwise span embeddings grow with them, and 250
    # make a step on LitBank's longest document several times slower and larger (docs/table1.md)
    "coref": Scale(
        overrides={
            "model.max_antecedents": 50,
            "trainer.num_epochs": 6,
            "trainer.patience": 3,
        }
    ),
    "ner": Scale(overrides={"trainer.num_epochs": 20, "trainer.patience": 5}),
    "sst": Scale(
        overrides={
            "dataset_reader.use_subtrees": False,
            "trainer.num_epochs": 12,
            "trainer.patience": 4,
        }
    ),
}
SCALES: Dict[str, Dict[str, Scale]] = {
    "cpu": _CPU,
    "cpu_long": {
        **_CPU,
        # the config's own 26 epochs: at 12, the first baseline still gained 6 F1 an epoch at its
        # 6th (nothing in the config depends on the cap, so runs begun under 12 went on as under 26)
        "squad": Scale(overrides={"trainer.num_epochs": 26, "trainer.patience": 3}),
        "snli": Scale(overrides={"trainer.num_epochs": 24}),  # the config's patience (5)
        "coref": Scale(
            overrides={**_CPU["coref"].overrides, "trainer.num_epochs": 18}  # patience 3
        ),
    },
    # SNLI's cap is the paper's setting on all of SNLI (the config's own default is the bundled
    # small-scale run's 8)
    "full": {
        **{name: Scale() for name in TASKS},
        "snli": Scale(overrides={"trainer.num_epochs": 75}),
    },
}

# `smoke`: a taste of the table in minutes on the slices shipped in elmo_plugin/data/smoke (its
# README: licences, provenance), 2 epochs a run, with word2vec vectors of a 10,000-sentence slice of
# Wikipedia built beside the runs; NER (CoNLL-2003 cannot be shipped) joins only when its data
# variables name CoNLL-2003, then on 3% of its training sentences. Not comparable to the paper.
SMOKE_DIR = Path(__file__).resolve().parents[1] / "data" / "smoke"
SMOKE_NOTE = "smoke: not comparable to the paper (tiny slices, 2 epochs a run)"
SMOKE_EPOCHS = {"trainer.num_epochs": 2}


def _smoke_data(*pairs: Tuple[str, str]) -> Dict[str, str]:
    """Each data variable's three splits, `PREFIX_TRAIN`... = the smoke file `PATTERN` names."""
    return {
        f"{prefix}_{split.upper()}": str(SMOKE_DIR / pattern.format(split=split))
        for prefix, pattern in pairs
        for split in ("train", "dev", "test")
    }


SCALES["smoke"] = {
    "squad": Scale(overrides=SMOKE_EPOCHS, data=_smoke_data(("SQUAD", "squad/{split}.json"))),
    "snli": Scale(overrides=SMOKE_EPOCHS, data=_smoke_data(("SNLI", "snli/{split}"))),
    "srl": Scale(
        overrides={**SMOKE_EPOCHS, "data_loader.batch_sampler.batch_size": 16},
        data=_smoke_data(("SRL", "srl/{split}.gold_conll")),
    ),
    "coref": Scale(
        overrides={**SMOKE_EPOCHS, "model.max_antecedents": 50},
        data=_smoke_data(("COREF", "coref/{split}.gold_conll")),
    ),
    "ner": Scale(fraction=0.03, overrides=SMOKE_EPOCHS),  # the user's CoNLL-2003
    "sst": Scale(
        overrides={**SMOKE_EPOCHS, "dataset_reader.use_subtrees": False},
        data=_smoke_data(("SST", "sst/{split}.txt")),
    ),
}
SMOKE_WIKIPEDIA = SMOKE_DIR / "wikipedia" / "sentences.txt.gz"
CONLL2003_VARIABLES = ("CONLL2003_TRAIN", "CONLL2003_DEV", "CONLL2003_TEST")

SUBSET_SEED = 0  # the training subset of a fraction < 1, the same for every run
# top-level arguments of both rows' configs at every scale: the baselines' word vectors, as the
# paper's (the configs train them from scratch unless told; `elmo-table1` builds the files first)
CONFIG_ARGUMENTS: Dict[str, Any] = {"pretrained_word_vectors": True}


def conll2003_given() -> bool:
    """Whether CoNLL-2003 is at hand for NER at the `smoke` scale: its three data variables (set,
    or defaults under `$ELMO_PLUGIN_DATA`) name existing files."""
    from elmo_plugin.common.config_env import config_defaults

    values = {**config_defaults(), **os.environ}
    return all(os.path.isfile(values.get(name) or "") for name in CONLL2003_VARIABLES)


def scale_tasks(scale: str, tasks: Optional[Sequence[str]] = None) -> List[str]:
    """The tasks a table at `scale` trains: `tasks` (default all six), less NER at the `smoke`
    scale without CoNLL-2003 (asked for by name, that is an error saying what to set)."""
    if tasks is None:
        return [t for t in TASKS if not (scale == "smoke" and t == "ner" and not conll2003_given())]
    if scale == "smoke" and "ner" in tasks and not conll2003_given():
        raise UsageError(
            "ner at the smoke scale reads CoNLL-2003 (its licence does not allow shipping a "
            f"slice): set {', '.join(CONLL2003_VARIABLES)} to its files (or ELMO_PLUGIN_DATA to a "
            "folder with conll2003/)"
        )
    return list(tasks)


def build_smoke_vectors(serialization_dir: str, tasks: Sequence[str]) -> Dict[str, str]:
    """The `smoke` scale's word vectors for `tasks`: word2vec on the shipped Wikipedia slice,
    built once under `serialization_dir/word_vectors` (a progress bar per file); returns each
    task's word-vector variable -> its file."""
    from elmo_plugin.data.word_vectors import BASELINE_VECTORS, train_word_vectors

    folder = Path(serialization_dir) / "word_vectors"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {TASKS[task].word_vectors for task in tasks}
    variables = {}
    for name, spec in BASELINE_VECTORS.items():
        if not wanted & set(spec.variables):
            continue
        path = folder / f"{name}.txt.gz"
        if not path.is_file():
            train_word_vectors(
                [str(SMOKE_WIKIPEDIA)], str(path), dim=spec.dim, lowercase=spec.lowercase,
                min_count=3, epochs=3,
            )  # fmt: skip
        variables.update({v: str(path) for v in spec.variables if v in wanted})
    return variables


def runs(seeds: Sequence[int], fraction: float) -> List[sweep.Run]:
    """The baseline and the config's ELMo placement, per seed."""
    return sweep.grid([sweep.BASELINE, None], [None], [None], [None], [fraction], seeds)


def error_reduction(baseline: float, elmo: float) -> float:
    """Relative error reduction in percent, as Table 1's last column: the share of the
    baseline's error (100 - baseline) that ELMo removes."""
    return 100.0 * (elmo - baseline) / (100.0 - baseline)


def row_results(records: Sequence[Dict[str, Any]], placement: Optional[str]) -> List[float]:
    """The test figures of one row's runs (`placement`: `sweep.BASELINE` or None, + ELMo), in
    percent as Table 1 (AllenNLP reports fractions)."""
    return [
        100.0 * r["test"] for r in records if r["placement"] == placement and r["test"] is not None
    ]


def summarise(task: str, records: Sequence[Dict[str, Any]], train_size: Optional[int]) -> Dict:
    """One Table 1 row from a task's run records: mean and standard deviation over seeds."""
    spec = TASKS[task]
    row: Dict[str, Any] = {"task": task, "metric": spec.metric, "train_size": train_size}
    for key, placement in (("baseline", sweep.BASELINE), ("elmo", None)):
        values = row_results(records, placement)
        row[f"{key}_seeds"] = len(values)
        row[f"{key}_mean"] = statistics.mean(values) if values else None
        row[f"{key}_std"] = statistics.stdev(values) if len(values) > 1 else None
    if row["baseline_mean"] is not None and row["elmo_mean"] is not None:
        row["increase"] = row["elmo_mean"] - row["baseline_mean"]
        row["error_reduction"] = error_reduction(row["baseline_mean"], row["elmo_mean"])
        stds = [s for s in (row["baseline_std"], row["elmo_std"]) if s is not None]
        # the target: above the baseline by more than twice the larger standard deviation
        # (None while neither row has two seeds: no spread to judge by)
        row["beyond_two_std"] = row["increase"] > 2 * max(stds) if stds else None
    times = [r["wall_time_s"] for r in records if r.get("wall_time_s") is not None]
    row["wall_time_s"] = sum(times) if times else None  # all the task's runs, one after another
    row["paper_baseline"] = spec.paper_baseline
    row["paper_elmo"] = spec.paper_elmo
    row["paper_increase"] = round(spec.paper_elmo - spec.paper_baseline, 2)
    row["paper_error_reduction"] = error_reduction(spec.paper_baseline, spec.paper_elmo)
    return row


def total_wall_time(rows: Sequence[Dict[str, Any]]) -> Optional[float]:
    """Seconds of training of every run in `rows`, one after another (None: no run has a log)."""
    times = [row["wall_time_s"] for row in rows if row["wall_time_s"] is not None]
    return sum(times) if times else None


def _cell(mean: Optional[float], std: Optional[float]) -> str:
    if mean is None:
        return "-"
    return f"{mean:.2f}" if std is None else f"{mean:.2f} +/- {std:.2f}"


def _yes_no(value: Optional[bool]) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _runs_table(runs: Dict[str, List[Dict[str, Any]]]) -> str:
    """Every run: its task, row, seed, best dev and test metric (percent), best epoch, minutes."""
    from elmo_plugin.analysis.report import markdown_table

    def percent(value: Optional[float]) -> str:
        return "-" if value is None else f"{100 * value:.2f}"

    body = [
        [
            task,
            "baseline" if record["placement"] == sweep.BASELINE else "+ ELMo",
            record["seed"],
            percent(record["best_dev"]),
            percent(record["test"]),
            "-" if record["best_epoch"] is None else record["best_epoch"],
            "-" if record.get("wall_time_s") is None else f"{record['wall_time_s'] / 60:.0f}",
        ]
        for task, records in runs.items()
        for record in records
    ]
    header = ["task", "row", "seed", "best dev", "test", "best epoch", "minutes"]
    return markdown_table(header, body)


def markdown(
    rows: Sequence[Dict[str, Any]],
    scale: str,
    runs: Optional[Dict[str, List[Dict[str, Any]]]] = None,
    baselines_from: Optional[str] = None,
) -> str:
    """Table 1 as markdown: ours beside the paper's four columns, whether the increase passes
    twice the larger standard deviation, and (given `runs`) every run's figures."""
    from elmo_plugin.analysis.report import markdown_table

    header = [
        "task",
        "metric",
        "train size",
        "baseline",
        "+ ELMo",
        "increase (abs / rel. error)",
        "> 2 std",
        "seeds",
        "paper baseline",
        "paper + ELMo",
        "paper increase (abs / rel.)",
    ]
    body = []
    for row in rows:
        increase = (
            "-"
            if row.get("increase") is None
            else f"{row['increase']:+.2f} / {row['error_reduction']:.1f}%"
        )
        body.append(
            [
                row["task"],
                row["metric"],
                row["train_size"] if row["train_size"] is not None else "-",
                _cell(row["baseline_mean"], row["baseline_std"]),
                _cell(row["elmo_mean"], row["elmo_std"]),
                increase,
                _yes_no(row.get("beyond_two_std")),
                f"{row['baseline_seeds']} / {row['elmo_seeds']}",
                f"{row['paper_baseline']:.2f}",
                f"{row['paper_elmo']:.2f}",
                f"{row['paper_increase']:+.2f} / {row['paper_error_reduction']:.1f}%",
            ]
        )
    seconds = total_wall_time(rows)
    count = sum(row["baseline_seeds"] + row["elmo_seeds"] for row in rows)
    total = (
        f"\nTraining time of the {count} runs, one after another: {seconds / 3600:.1f} h"
        " (each run's `allennlp train` time, from its log)\n"
        if seconds is not None
        else ""
    )
    runs_section = (
        "\nEvery run (best dev and test metric in percent; minutes of `allennlp train`)\n\n"
        + _runs_table(runs)
        if runs
        else ""
    )
    source = f"; baseline runs from `{baselines_from}`" if baselines_from else ""
    note = f"**{SMOKE_NOTE}**\n\n" if scale == "smoke" else ""
    return (
        note
        + f"Table 1 at the `{scale}` scale (test figures, mean +/- std over seeds{source})\n\n"
        + markdown_table(header, body)
        + total
        + runs_section
    )


def compare_elmo(
    records: Dict[str, List[Dict[str, Any]]], other: Dict[str, Any]
) -> List[Dict[str, Any]]:
    """Per task, this table's + ELMo row against the + ELMo row of `other` (another
    `table1.json`'s content, e.g. the same tasks with another biLM): both means, their
    difference and Welch's t-test (two-sided p; it does not assume the two rows' spreads equal,
    and with 2-3 seeds a row only a large difference reaches a small p)."""
    from scipy import stats

    compared = []
    for task, task_records in records.items():
        ours = row_results(task_records, None)
        theirs = row_results(other["runs"].get(task, []), None)
        if not ours or not theirs:
            continue
        welch = None
        if len(ours) > 1 and len(theirs) > 1:
            welch = float(stats.ttest_ind(ours, theirs, equal_var=False).pvalue)
            welch = None if math.isnan(welch) else welch  # both rows without spread
        compared.append(
            {
                "task": task,
                "elmo_mean": statistics.mean(ours),
                "elmo_seeds": len(ours),
                "other_mean": statistics.mean(theirs),
                "other_seeds": len(theirs),
                "difference": statistics.mean(ours) - statistics.mean(theirs),
                "welch_p": welch,
            }
        )
    return compared


def comparison_markdown(compared: Sequence[Dict[str, Any]], other_path: str) -> str:
    """`compare_elmo`'s rows as a markdown section."""
    from elmo_plugin.analysis.report import markdown_table

    body = [
        [
            row["task"],
            f"{row['elmo_mean']:.2f} ({row['elmo_seeds']})",
            f"{row['other_mean']:.2f} ({row['other_seeds']})",
            f"{row['difference']:+.2f}",
            "-" if row["welch_p"] is None else f"{row['welch_p']:.3f}",
        ]
        for row in compared
    ]
    header = ["task", "+ ELMo here (seeds)", "+ ELMo there (seeds)", "difference", "Welch p"]
    return (
        f"\n+ ELMo here against + ELMo of `{other_path}` (test means; Welch's t-test, two-sided)\n\n"
        + markdown_table(header, body)
    )


def figure(rows: Sequence[Dict[str, Any]], title: Optional[str] = None):
    """Per task: baseline and + ELMo (mean, std bars), the paper's two figures as markers;
    `title` above (the `smoke` scale's note)."""
    from elmo_plugin.analysis.report import pyplot

    plt = pyplot()
    fig, axis = plt.subplots(figsize=(7.5, 3.2))
    names = {"baseline": "baseline", "elmo": "+ ELMo"}
    labelled = set()  # each legend entry once, from the first bar of its kind (any task)
    for i, row in enumerate(rows):
        for offset, key, color in ((-0.18, "baseline", "tab:gray"), (0.18, "elmo", "tab:blue")):
            if row[f"{key}_mean"] is not None:
                axis.bar(
                    i + offset,
                    row[f"{key}_mean"],
                    width=0.34,
                    yerr=row[f"{key}_std"],  # none with one seed (no cap drawn)
                    color=color,
                    capsize=3,
                    label=None if key in labelled else names[key],
                )
                labelled.add(key)
            axis.plot(
                i + offset, row[f"paper_{key}"], marker="_", markersize=14, color="black",
                label=None if "paper" in labelled else "paper",
            )  # fmt: skip
            labelled.add("paper")
    axis.set_xticks(range(len(rows)))
    axis.set_xticklabels([f"{r['task']}\n({r['metric']})" for r in rows], fontsize=8)
    axis.set_ylabel("test metric (%)")
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if title:
        axis.set_title(title, fontsize=9, color="tab:red")
    fig.tight_layout()
    return fig


def train_size(run_dir: Path) -> int:
    """The number of training instances a finished run read: its saved config's training
    reader (subset included) over its training data; counted once, then kept beside the run."""
    from allennlp.common import Params
    from allennlp.data import DatasetReader

    counted = run_dir / "training_instances.json"
    if counted.is_file():
        return int(json.loads(counted.read_text()))
    config = Params.from_file(str(run_dir / "config.json"))
    reader = DatasetReader.from_params(config.pop("dataset_reader"))
    size = sum(1 for _ in reader.read(config.pop("train_data_path")))
    counted.write_text(json.dumps(size))
    return size


def result(scale: str, seeds: Sequence[int], records: Dict[str, List[Dict]], rows: List[Dict]):
    """table1.json's content."""
    return {
        "scale": scale,
        **({"note": SMOKE_NOTE} if scale == "smoke" else {}),
        "seeds": list(seeds),
        "scales": {task: asdict(SCALES[scale][task]) for task in records},
        "runs": records,
        "table": rows,
        "wall_time_s": total_wall_time(rows),
    }


def run_keys(run_dir: Path) -> List[Tuple[str, ...]]:
    """A Table 1 run's keys for `sweep.seconds_left`: its task and row, then its task."""
    task = run_dir.parent.name
    row = "baseline" if run_dir.name.startswith(f"placement={sweep.BASELINE},") else "elmo"
    return [(task, row), (task,)]


def run_table(
    serialization_dir: str,
    scale: str,
    seeds: Sequence[int],
    tasks: Sequence[str],
    rows: Sequence[str] = ("baseline", "elmo"),
    train_run: Optional[Callable[..., None]] = None,
    baselines_from: Optional[str] = None,
    runs_from: Sequence[str] = (),
    cuda_device: int = -1,
) -> Dict[str, Any]:
    """Train (or resume) every run of `tasks` not finished yet, in task order, with a progress bar
    whose ETA is the finished runs' training times (`seconds_left`) and, under it, the running
    run's epoch and batches (`sweep.RunFollower`); then tabulate every task of the table that has
    runs in `serialization_dir` (finished runs of other tasks are reported, never dropped). A run
    that a `runs_from` file records is not trained again. `cuda_device` >= 0 trains on that GPU
    (the scale's settings are the same on any device). `train_run` (default `sweep.train`) trains
    one run; the scale's data variables and the smoke word vectors reach it as its `env`, never
    through `os.environ`."""
    train_run = train_run or sweep.train
    if scale not in SCALES:
        raise UsageError(f"unknown scale {scale!r}; one of {sorted(SCALES)}")
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        raise UsageError(f"unknown task(s) {unknown}; the table's tasks are {list(TASKS)}")
    tasks = scale_tasks(scale, tasks)
    placements = {"baseline": sweep.BASELINE, "elmo": None}

    def task_runs(task: str) -> List[sweep.Run]:
        return [
            r
            for r in runs(seeds, SCALES[scale][task].fraction)
            if r.placement in {placements[row] for row in rows}
        ]

    recorded = recorded_runs(runs_from)
    out = Path(serialization_dir)
    todo = [
        (task, run)
        for task in tasks
        for run in task_runs(task)
        if (task, run.placement, run.seed) not in recorded
    ]
    logged = [log.with_suffix("") for log in out.glob("*/*.log")]
    progress = sweep.Progress(
        "Table 1 runs", [out / task / run.name for task, run in todo], logged, run_keys
    )
    variables: Dict[str, str] = {}
    if scale == "smoke" and progress.unfinished:
        variables = build_smoke_vectors(serialization_dir, tasks)
    try:
        for task, run in todo:
            run_dir = out / task / run.name
            if run_dir not in progress.unfinished:
                continue
            spec = SCALES[scale][task]
            overrides = {
                **spec.overrides,
                **({"trainer.cuda_device": cuda_device} if cuda_device >= 0 else {}),
            }
            progress.start(run_dir, f"{task} {run.name}")
            next(
                sweep.sweep(
                    str(CONFIG_DIR / TASKS[task].config),
                    str(out / task),
                    [run],
                    json.dumps(overrides) if overrides else None,
                    train_run=train_run,
                    fraction_batches_per_epoch=spec.fraction_batches_per_epoch,
                    subset_seed=SUBSET_SEED,
                    arguments=CONFIG_ARGUMENTS,
                    env={**variables, **spec.data},
                )
            )
            progress.finish(run_dir)
    finally:
        progress.close()  # also after a failed run: its log's follower stops
    return collect(serialization_dir, scale, seeds, baselines_from, runs_from)


def recorded_runs(runs_from: Sequence[str]) -> Set[Tuple[str, Optional[str], int]]:
    """`(task, placement, seed)` of every run the `table1.json` files `runs_from` record."""
    return {
        (task, record["placement"], record["seed"])
        for path in runs_from
        for task, task_records in json.loads(Path(path).read_text())["runs"].items()
        for record in task_records
    }


def collect(
    serialization_dir: str,
    scale: str,
    seeds: Sequence[int],
    baselines_from: Optional[str] = None,
    runs_from: Sequence[str] = (),
) -> Dict[str, Any]:
    """The finished runs of every task under `serialization_dir`, as table1.json's content.
    `baselines_from`: another table's folder, or the `table1.json` it wrote (its run records: a
    table whose run folders are gone, say), whose baseline runs stand in for this one's (e.g.
    + ELMo with a larger biLM against the same baselines). `runs_from`: `table1.json` files of
    earlier tables of this one (e.g. runs made on a machine whose folders are gone): their records
    count for the runs (task, row, seed) that no folder holds; each keeps its file as `"from"`."""
    records: Dict[str, List[Dict]] = {}
    table = []
    own = Path(serialization_dir)
    baselines_json = baselines_from is not None and Path(baselines_from).is_file()
    other = Path(baselines_from) if baselines_from and not baselines_json else own
    folders = {sweep.BASELINE: other, None: own}
    # records of other tables' files, each (path, content, rows taken, marked with "from"): the
    # baseline row of a `baselines_from` file as it is, every other row of `runs_from` files
    saved: List[Tuple[str, Dict[str, Any], Set[Optional[str]], bool]] = []
    if baselines_json:
        content = json.loads(Path(str(baselines_from)).read_text())
        saved.append((str(baselines_from), content, {sweep.BASELINE}, False))
    rows: Set[Optional[str]] = {None} if baselines_json else {sweep.BASELINE, None}
    saved += [(path, json.loads(Path(path).read_text()), rows, True) for path in runs_from]
    for task, spec in TASKS.items():
        finished = [
            (run, folders[run.placement] / task)
            for run in runs(seeds, SCALES[scale][task].fraction)
            if sweep.is_finished(folders[run.placement] / task / run.name)
            and not (baselines_json and run.placement == sweep.BASELINE)
        ]
        task_records = [
            record
            for run, folder in finished
            for record in sweep.sweep(
                str(CONFIG_DIR / spec.config),
                str(folder),
                [run],
                train_run=_never_train,
                subset_seed=SUBSET_SEED,
            )
        ]
        own_runs = any(folder == own / task for _, folder in finished)
        sizes = [train_size(folder / run.name) for run, folder in finished[:1]]
        for path, content, taken, marked in saved:
            have = {(r["placement"], r["seed"]) for r in task_records}
            added = [
                {**record, "from": record.get("from", path)} if marked else record
                for record in content["runs"].get(task, [])
                if record["placement"] in taken
                and record["seed"] in seeds
                and (record["placement"], record["seed"]) not in have
            ]
            own_runs = own_runs or (marked and bool(added))  # runs of this table, made elsewhere
            task_records += added
            sizes += [row["train_size"] for row in content["table"] if row["task"] == task]
        if not own_runs:
            continue  # the task has no run of this table's own (other baselines alone: no row)
        task_records.sort(key=lambda r: (r["placement"] != sweep.BASELINE, r["seed"]))
        records[task] = task_records
        table.append(summarise(task, task_records, sizes[0] if sizes else None))
    return {
        **result(scale, seeds, records, table),
        "baselines_from": baselines_from,
        "runs_from": list(runs_from),
    }


def _never_train(
    run_dir: Path, config_text: str, overrides: Optional[str], env: Optional[Dict[str, str]] = None
) -> None:
    raise AssertionError(f"{run_dir} is not finished")  # collect() passes finished runs only
