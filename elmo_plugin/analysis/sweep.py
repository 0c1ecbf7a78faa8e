"""Table 2 / Table 3 / A.2 / Figure 1 as one grid: train a task config for every combination of
ELMo placement, lambda, Eq. (1) mode, training fraction and seed; collect dev and test metrics."""

import codecs
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import (
    Callable,
    Dict,
    Hashable,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from tqdm import tqdm

from elmo_bilm.sources.archives import checked_members
from elmo_bilm.utils.files import FormatError, UsageError, atomic_output
from elmo_bilm.utils.progress import progress_bar

BASELINE = "none"  # the placement value that means "the baseline config, no ELMo"


@dataclass(frozen=True)
class Run:
    """One training run of a sweep: the grid's values (None: the config's own) and the seed."""

    placement: Optional[str]  # None: the config's own; "none": the baseline
    l2_coefficient: Optional[float]
    layers: Optional[str]
    gamma: Optional[bool]
    fraction: float
    seed: int

    @property
    def name(self) -> str:
        """The run's folder name: its values as `key=value` pairs, comma-separated."""
        parts = [f"placement={self.placement or 'config'}"]
        if self.placement != BASELINE:
            parts += [
                f"lambda={self.l2_coefficient}",
                f"layers={self.layers}",
                f"gamma={self.gamma}",
            ]
        parts += [f"fraction={self.fraction}", f"seed={self.seed}"]
        return ",".join(parts)

    @property
    def group(self) -> str:
        """The name without the seed: the runs whose results are averaged together."""
        return self.name.rsplit(",seed=", 1)[0]


def label(group: str) -> str:
    """A grid point's name for tables and plots: the settings a run sets (`=None`: the config's
    own value, left out)."""
    return ",".join(part for part in group.split(",") if not part.endswith("=None"))


def grid(
    placements: Sequence[Optional[str]],
    lambdas: Sequence[Optional[float]],
    layers: Sequence[Optional[str]],
    gammas: Sequence[Optional[bool]],
    fractions: Sequence[float],
    seeds: Sequence[int],
) -> List[Run]:
    """Every combination; the baseline once per fraction and seed (ELMo settings do not apply)."""
    bad = [f for f in fractions if not 0.0 < f <= 1.0]
    if bad:
        raise UsageError(f"training fractions must be in (0, 1], got {bad}")
    runs: Dict[str, Run] = {}
    for p, lam, lay, g, f, s in itertools.product(
        placements, lambdas, layers, gammas, fractions, seeds
    ):
        run = Run(p, None, None, None, f, s) if p == BASELINE else Run(p, lam, lay, g, f, s)
        runs.setdefault(run.name, run)
    return list(runs.values())


def baseline_config(elmo_config: str) -> str:
    """The baseline sibling of a task's `_elmo` config (`X_elmo.jsonnet` -> `X.jsonnet`)."""
    if not elmo_config.endswith("_elmo.jsonnet"):
        raise FormatError(f"{elmo_config}: a sweep takes a task's `_elmo.jsonnet` config")
    return elmo_config[: -len("_elmo.jsonnet")] + ".jsonnet"


def run_config(
    elmo_config: str,
    run: Run,
    fraction_batches_per_epoch: Optional[int] = None,
    subset_seed: Optional[int] = None,
    arguments: Optional[Dict[str, object]] = None,
) -> str:
    """The jsonnet of one run: a call of the `_elmo` config (or its baseline sibling), whose
    top-level arguments are the ELMo settings and the seed, with the run's values (and
    `arguments`, further top-level arguments of both rows' configs, e.g.
    `pretrained_word_vectors`); the training
    reader wrapped in a seeded subset (drawn with `subset_seed`, default the run's seed: one subset
    per seed, as in Figure 1). With `fraction_batches_per_epoch`, an epoch of a run on a fraction
    < 1 is that many batches (the loader cycles through the subset), so that patience and the
    epoch cap measure comparable training on a small subset instead of a handful of updates."""
    config = elmo_config if run.placement != BASELINE else baseline_config(elmo_config)
    if not os.path.isfile(config):
        raise FileNotFoundError(f"{config}: no such config")
    call_arguments: Dict[str, object] = {"seed": run.seed, **(arguments or {})}
    if run.placement != BASELINE:
        settings = {
            "placement": run.placement,
            "l2_coefficient": run.l2_coefficient,
            "layers": run.layers,
            "gamma": run.gamma,
        }
        call_arguments.update({k: v for k, v in settings.items() if v is not None})
    call = ", ".join(f"{key}={json.dumps(value)}" for key, value in call_arguments.items())
    text = f"local config = import {json.dumps(os.path.abspath(config))};\nlocal base = config({call});\n"
    if run.fraction == 1.0:
        return text + "base\n"
    text += (
        "base + {\n"
        '  dataset_reader: { type: "elmo_plugin_subset", reader: base.dataset_reader, '
        f"fraction: {run.fraction}, seed: {run.seed if subset_seed is None else subset_seed} }},\n"
        '  validation_dataset_reader: if std.objectHas(base, "validation_dataset_reader") '
        "then base.validation_dataset_reader else base.dataset_reader,\n"
    )
    if fraction_batches_per_epoch is not None:
        text += f"  data_loader+: {{ batches_per_epoch: {fraction_batches_per_epoch} }},\n"
    return text + "}\n"


def log_path(run_dir: Path) -> Path:
    """Where a run's `allennlp train` output goes: `RUN.log` beside the run's folder."""
    return run_dir.parent / f"{run_dir.name}.log"


def train(
    run_dir: Path,
    config_text: str,
    overrides: Optional[str],
    env: Optional[Mapping[str, str]] = None,
) -> None:
    """`allennlp train` of one run in its own process; an interrupted run continues (--recover).
    `env`: variables set for that process over this one's environment (e.g. the `smoke` scale's
    data paths), without changing this process's `os.environ`."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    config_file = run_dir.parent / f"{run_dir.name}.jsonnet"
    with atomic_output(config_file, overwrite=True) as partial:
        Path(partial).write_text(config_text)
    command = [
        str(Path(sys.executable).parent / "allennlp"),
        "train",
        str(config_file),
        "-s",
        str(run_dir),
        "--include-package",
        "elmo_plugin",
    ]
    if run_dir.exists() and not any(run_dir.glob("*_state_e*.th")):
        # nothing to recover (it failed before its first checkpoint, e.g. on bad data): start
        # again, so that fixing the data or the config is enough
        shutil.rmtree(run_dir)
    if run_dir.exists():
        command.append("--recover")
    if overrides:
        command += ["--overrides", overrides]
    log_file = log_path(run_dir)
    variables = None if env is None else {**os.environ, **env}
    with open(log_file, "a") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=variables)
    if result.returncode != 0:
        lines = log_file.read_text(errors="replace").splitlines()
        errors = [line for line in lines if "Error" in line or "error" in line][-3:]
        raise RuntimeError(
            f"training {run_dir} failed (exit {result.returncode}); the end of {log_file}:\n"
            + "\n".join(errors or lines[-5:])
        )


def is_finished(run_dir: Path) -> bool:
    """A run is done once AllenNLP wrote its metrics and a complete archive (a kill while archiving
    leaves a truncated `model.tar.gz` after `metrics.json`; such a run is resumed)."""
    archive = run_dir / "model.tar.gz"
    if not (run_dir / "metrics.json").is_file() or not archive.is_file():
        return False
    try:
        checked_members(archive)  # one reader of archives: elmo_bilm.sources.archives
    except FormatError:
        return False
    return True


# a line AllenNLP logs: "2026-11-24 03:14:35,147 - INFO - allennlp.common.plugins - Plugin ..."
_LOG_LINE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} - [A-Z]+ - \S+ - (.*)")
# every `allennlp` command logs this first (plugin discovery), so it starts each invocation
_INVOCATION_START = "Plugin allennlp_models available"


def wall_time(run_dir: Path) -> Optional[float]:
    """Seconds a run spent in `allennlp train`, summed over its invocations (a run resumed with
    `--recover` has several in its log): from each invocation's first logged line to its last.
    Time after an interrupted invocation's last line (work redone on resuming) is not counted.
    None when the run has no log."""
    log_file = log_path(run_dir)
    if not log_file.is_file():
        return None
    spans: List[List[datetime]] = []
    with open(log_file, errors="replace") as log:
        for line in log:
            for stamp, message in _LOG_LINE.findall(line):  # tqdm lines may hold one mid-line
                moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
                if message.startswith(_INVOCATION_START) or not spans:
                    spans.append([moment, moment])
                spans[-1][1] = moment
    return sum((end - start).total_seconds() for start, end in spans)


RunKeys = Callable[[Path], Sequence[Hashable]]


def seconds_left(
    todo: Sequence[Path], done: Iterable[Path], keys: RunKeys
) -> List[Optional[float]]:
    """Training seconds each run folder of `todo` should still take, judged by the finished runs
    among `done`: the mean time of those that share its most specific key (`keys` gives a run's
    keys from the most to the least specific), less what an interrupted run has already spent.
    None for a run no finished run shares a key with: runs of different tasks or fractions take
    very different times, so neither counting runs nor another task's times would do. A run's
    time counts once its `metrics.json` is written (training over; its archive, which
    `is_finished` decompresses to check, does not change the time)."""
    times: Dict[Hashable, List[float]] = {}
    for run_dir in done:
        seconds = wall_time(run_dir)
        if seconds is not None and (run_dir / "metrics.json").is_file():
            for key in keys(run_dir):
                times.setdefault(key, []).append(seconds)
    left: List[Optional[float]] = []
    for run_dir in todo:
        known = next((times[key] for key in keys(run_dir) if key in times), None)
        spent = wall_time(run_dir) or 0.0
        left.append(None if known is None else max(statistics.mean(known) - spent, 0.0))
    return left


def group_key(run_dir: Path) -> List[Tuple[str, ...]]:
    """A sweep run's keys for `seconds_left`: its grid point (settings without the seed), then
    the whole sweep (one config, so a new grid point is judged by the others)."""
    return [(run_dir.name.rsplit(",seed=", 1)[0],), ()]


# what a run's log says of its progress (`allennlp train`'s output, read as it grows): the trainer's
# "Epoch 0/1" (the epoch's index / the last index), "Training" and "Validating"; the final test
# evaluation; reading data; and AllenNLP's tqdm status, e.g. "loss: 1.09 ||: 45%|####5     |
# 9/20 [00:03<00:04, 2.50it/s]" (batches done / batches of the pass [elapsed<left)
_RUN_PROGRESS = re.compile(
    r"gradient_descent_trainer - Epoch (?P<epoch>\d+)/(?P<last>\d+)(?=[\r\n])"
    r"|gradient_descent_trainer - (?P<phase>Training|Validating)(?=[\r\n])"
    r"|(?P<testing>The model will be evaluated using the best epoch weights)"
    r"|(?P<reading>Reading (?:training|validation|test) data)"
    r"|(?P<done>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)<(?P<left>[\d:]+|\?)"
)
# seconds between two reads of a run's log while it trains (None: read only when `poll` is called)
FOLLOW_SECONDS: Optional[float] = 1.0


class RunFollower:
    """One run's progress under the grid's bar, read from its log as `allennlp train` writes it:
    its epoch, the pass (training, validating, testing) and the pass's batches with AllenNLP's
    own estimate of the time left. Reads only what the log gains after it is made (a resumed run's
    log holds its earlier invocations too). `poll` reads what is new; with `interval`, a thread
    polls every `interval` seconds until `close`."""

    def __init__(self, log_file: Path, interval: Optional[float] = None) -> None:
        self.log_file = log_file
        self._offset = log_file.stat().st_size if log_file.is_file() else 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # the log's last line so far (a tqdm status ends with no newline)
        self.epoch: Optional[Tuple[int, int]] = None  # (epoch, epochs), counted from 1
        self.phase = "starting"
        self.batches: Optional[Tuple[int, int, str]] = None  # (done, total, time left)
        self._lock = threading.Lock()
        self._bar = progress_bar(total=None, position=1, leave=False, bar_format="{desc}")
        self._bar.set_description_str(self.status())
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if interval is not None:
            self._thread = threading.Thread(target=self._follow, args=(interval,), daemon=True)
            self._thread.start()

    def _follow(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.poll()

    def poll(self) -> None:
        """Read what the log gained since the last call and show the run's progress."""
        with self._lock:
            if not self.log_file.is_file():
                return
            with open(self.log_file, "rb") as log:
                log.seek(self._offset)
                data = log.read()
            self._offset += len(data)
            text = self._pending + self._decoder.decode(data)
            # the last line, unfinished, is read again with what follows it (a repeated status
            # sets the same figures)
            end = max(text.rfind("\n"), text.rfind("\r")) + 1
            self._pending = text[end:]
            for match in _RUN_PROGRESS.finditer(text):
                self._read(match)
            # redrawn at most once a bar's interval (a line a minute in a log, not a second)
            self._bar.set_description_str(self.status(), refresh=False)
            self._bar.update(0)

    def _read(self, match: "re.Match[str]") -> None:
        if match["epoch"] is not None:
            self.epoch = (int(match["epoch"]) + 1, int(match["last"]) + 1)
            self.phase, self.batches = "starting the epoch", None
        elif match["phase"] is not None:
            self.phase, self.batches = match["phase"].lower(), None
        elif match["testing"] is not None:
            self.phase, self.batches = "testing", None
        elif match["reading"] is not None:
            self.phase, self.batches = "reading data", None
        else:
            self.batches = (int(match["done"]), int(match["total"]), match["left"])

    def status(self) -> str:
        """The run's progress in one line, e.g. `  epoch 1 of 2, training: batch 9/20 (45%),
        00:04 left of the pass`."""
        parts = [f"epoch {self.epoch[0]} of {self.epoch[1]}"] if self.epoch else []
        text = self.phase
        if self.batches is not None:
            done, total, left = self.batches
            share = f" ({100 * done // total}%)" if total else ""
            text += f": batch {done}/{total}{share}"
            if left != "?":
                text += f", {left} left of the pass"
        return "  " + ", ".join(parts + [text])

    def close(self) -> None:
        """Stop following (a last read first) and clear the run's line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll()
        self._bar.close()


class Progress:
    """A progress bar over a grid's run folders whose ETA is the training time still expected
    (`seconds_left`, with a count of the runs it cannot judge yet), or tqdm's runs per second
    while no run can be judged; under it, the run that trains now (`RunFollower`, from its log).
    `unfinished`: the run folders still to train (found once: `is_finished` reads each archive)."""

    def __init__(self, desc: str, run_dirs: Sequence[Path], done: Iterable[Path], keys: RunKeys):
        unfinished = [run_dir for run_dir in run_dirs if not is_finished(run_dir)]
        self.unfinished = set(unfinished)
        left = seconds_left(unfinished, done, keys)
        judged = any(seconds is not None for seconds in left)
        self._left = dict(zip(unfinished, left)) if judged else None
        self._bar = progress_bar(
            total=len(run_dirs),
            initial=len(run_dirs) - len(unfinished),
            desc=desc,
            unit="run",
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]" if judged else None,
        )
        self.follower: Optional[RunFollower] = None

    def start(self, run_dir: Path, label: str) -> None:
        """Name the run that trains now and, with estimates, the hours left (it included); print
        where its log is, and follow its progress in that log until `finish`."""
        self._stop_following()
        self._bar.set_postfix_str(f"{label}{self.eta()}")
        tqdm.write(f"{label}: training, log {log_path(run_dir)}")
        self.follower = RunFollower(log_path(run_dir), FOLLOW_SECONDS)

    def eta(self) -> str:
        """', about X h of training left' (and the runs not judged yet), or '' without estimates."""
        if self._left is None:
            return ""
        known = [seconds for seconds in self._left.values() if seconds is not None]
        text = f", about {sum(known) / 3600:.1f} h of training left"
        untimed = len(self._left) - len(known)
        if untimed:
            text += f" + {untimed} run{'s' * (untimed > 1)} not timed yet"
        return text

    def _stop_following(self) -> None:
        if self.follower is not None:
            self.follower.close()
            self.follower = None

    def finish(self, run_dir: Path) -> None:
        """Count the run in `run_dir` as done and stop following its log."""
        self._stop_following()
        self._bar.update(1)
        if self._left is not None:
            self._left.pop(run_dir, None)

    def close(self) -> None:
        """Stop following any log and close the progress bar."""
        self._stop_following()
        self._bar.close()


def validation_metric(run_dir: Path) -> str:
    """The run's validation metric without its sign (from the config AllenNLP saved), e.g.
    `f1-measure-overall`."""
    config = json.loads((run_dir / "config.json").read_text())
    metric = config.get("trainer", {}).get("validation_metric", "-loss")
    return (metric[0] if isinstance(metric, list) else metric)[1:]


def sweep(
    elmo_config: str,
    out_dir: str,
    runs: Sequence[Run],
    overrides: Optional[str] = None,
    train_run=train,
    fraction_batches_per_epoch: Optional[int] = None,
    subset_seed: Optional[int] = None,
    arguments: Optional[Dict[str, object]] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Iterator[Dict]:
    """Train every run not finished yet (`is_finished`: a finished run is not trained again);
    yield each run's record: its settings, best dev and test metric, training time.
    `arguments`: further top-level config arguments of every run (`run_config`); `env`: variables
    for the runs' training, over the environment (`train_run(run_dir, config_text, overrides,
    env=env)`; `train` sets them for its `allennlp train` process alone)."""
    if fraction_batches_per_epoch is not None and fraction_batches_per_epoch < 1:
        raise UsageError(f"batches per epoch must be positive, got {fraction_batches_per_epoch}")
    for run in runs:
        run_dir = Path(out_dir) / run.name
        text = run_config(elmo_config, run, fraction_batches_per_epoch, subset_seed, arguments)
        if not is_finished(run_dir):
            train_run(run_dir, text, overrides, env=env)
        metrics = json.loads((run_dir / "metrics.json").read_text())
        metric = validation_metric(run_dir)
        yield {
            **asdict(run),
            "group": run.group,
            "metric": metric,
            "best_dev": metrics.get(f"best_validation_{metric}"),
            "test": metrics.get(f"test_{metric}"),
            "best_epoch": metrics.get("best_epoch"),
            "wall_time_s": wall_time(run_dir),
        }


def summarise(records: Sequence[Dict]) -> List[Dict]:
    """Mean and standard deviation over seeds of every grid point."""
    groups: Dict[str, List[Dict]] = {}
    for record in records:
        groups.setdefault(record["group"], []).append(record)
    rows = []
    for group, members in groups.items():
        row = {
            k: members[0][k] for k in ("placement", "l2_coefficient", "layers", "gamma", "fraction")
        }
        row["group"] = group
        row["seeds"] = [m["seed"] for m in members]
        for key in ("best_dev", "test"):
            values = [m[key] for m in members if m[key] is not None]
            row[f"{key}_mean"] = statistics.mean(values) if values else None
            row[f"{key}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
        rows.append(row)
    return rows


# the task configs' validation metrics as a reader names them on an axis
METRIC_LABELS = {
    "f1-measure-overall": "F1 (labelled spans)",  # NER's entities, SRL's arguments
    "accuracy": "accuracy",
    "f1": "F1",
    "em": "exact match",
    "coref_f1": "average F1 (MUC, B3, CEAF)",
    "perplexity": "perplexity",
}
PLACEMENTS = {"input": "the input", "output": "the output", "both": "the input and output"}


def metric_label(metric: str) -> str:
    """`test METRIC` in words (an unknown metric: its name, `_` and `-` as spaces)."""
    return "test " + METRIC_LABELS.get(metric, metric.replace("_", " ").replace("-", " "))


def line_label(name: str) -> str:
    """A plotted setting in words: `placement=input` -> `+ ELMo at the input`, other settings
    below it as they are."""
    parts = label(name).split(",")
    first = parts[0].removeprefix("placement=")
    if first == BASELINE:
        return "baseline (no ELMo)"
    if parts[0].startswith("placement="):
        parts[0] = f"+ ELMo at {PLACEMENTS.get(first, first)}"
    return "\n".join(parts)


def figure_1(rows: Sequence[Dict], metric: str):
    """Test metric against training fraction (log scale), one line per setting."""
    from elmo_plugin.analysis.report import pyplot

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(4.2, 3.0))
    lines: Dict[str, List[Dict]] = {}
    for row in rows:
        lines.setdefault(row["group"].rsplit(",fraction=", 1)[0], []).append(row)
    for name, points in sorted(lines.items()):
        points = sorted(points, key=lambda r: r["fraction"])
        axis.errorbar(
            [100 * p["fraction"] for p in points],
            [p["test_mean"] for p in points],
            yerr=[p["test_std"] for p in points],
            marker="o",
            capsize=3,
            label=line_label(name),
        )
    axis.set_xscale("log")
    axis.xaxis.set_major_formatter(lambda value, _: f"{value:g}")  # 1, 10, 100: not 10^0
    axis.set_xlabel("% of the training set")
    axis.set_ylabel(metric_label(metric))
    axis.legend(fontsize=6)
    figure.tight_layout()
    return figure
