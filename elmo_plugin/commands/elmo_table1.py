"""`allennlp elmo-table1`: the paper's Table 1 (six tasks, baseline vs + ELMo, over seeds)."""

import argparse
import json
import os
from pathlib import Path

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import UsageError, reports_errors
from elmo_plugin.analysis import report, table1


@Subcommand.register("elmo-table1")
class ElmoTable1(Subcommand):
    """Train or resume the Table 1 grid (six tasks x {baseline, + ELMo} x seeds) at a named scale
    and write table1.json, table1.md and table1.png beside the paper's figures.

    Registered as a `Subcommand` with name "elmo-table1".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Train every run of the Table 1 grid that is not finished yet (an interrupted run "
            "continues with --recover) and tabulate test metrics: baseline and + ELMo mean +/- std "
            "over seeds, the increase and the relative error reduction, beside the paper's. "
            "`--scale cpu`: subsets and epoch caps for one core (about 45 min a run at most); "
            "`--scale full`: the configs as they are, on the data their variables name; "
            "`--scale smoke`: a taste in minutes on the slices shipped with the plugin (not "
            "comparable to the paper). Builds the baselines' word vectors first when their "
            "default files are missing."
        )
        subparser = parser.add_parser(self.name, description=description, help="Table 1.")
        subparser.add_argument(
            "-s", "--serialization-dir", required=True, help="one folder per run"
        )
        subparser.add_argument("--scale", choices=sorted(table1.SCALES), default="cpu")
        subparser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
        subparser.add_argument(
            "--tasks",
            nargs="+",
            choices=list(table1.TASKS),
            help="default: all six (at the smoke scale, ner only when CoNLL-2003 is given)",
        )
        subparser.add_argument(
            "--rows",
            nargs="+",
            choices=["baseline", "elmo"],
            default=["baseline", "elmo"],
            help="train these rows only (e.g. elmo with another biLM)",
        )
        subparser.add_argument(
            "--output-dir", help="where table1.json / .md / .png go (default: -s)"
        )
        subparser.add_argument(
            "--no-train",
            action="store_true",
            help="tabulate the finished runs only (e.g. while the grid trains in another process)",
        )
        subparser.add_argument(
            "--baselines-from",
            metavar="DIR_OR_JSON",
            help="tabulate the baseline runs of another table's folder, or of the table1.json it "
            "wrote, instead of -s's (e.g. -s holds + ELMo with a larger biLM, trained with "
            "--rows elmo)",
        )
        subparser.add_argument(
            "--runs-from",
            nargs="+",
            default=[],
            metavar="JSON",
            help="table1.json files of earlier tables of this one (e.g. written on a machine whose "
            "run folders are gone): their run records count for the runs no folder holds",
        )
        subparser.add_argument(
            "--compare-elmo-with",
            metavar="JSON",
            help="another table1.json (e.g. the same tasks with another biLM): compare its + ELMo "
            "row with this table's, per task (means, difference, Welch's t-test)",
        )
        subparser.add_argument(
            "--cuda-device",
            type=int,
            default=-1,
            help="train on this GPU (default -1: the CPU); the scale's settings stay the same",
        )
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-table1")
def _run(args: argparse.Namespace) -> None:
    from elmo_plugin.common.config_env import data_dir
    from elmo_plugin.data.word_vectors import build_baseline_vectors

    if args.baselines_from and "baseline" in args.rows and not args.no_train:
        raise UsageError(
            "--baselines-from tabulates another folder's baselines: train with --rows elmo "
            "(or tabulate with --no-train)"
        )
    named = [("--runs-from", path) for path in args.runs_from]
    named += [("--compare-elmo-with", args.compare_elmo_with)] if args.compare_elmo_with else []
    for flag, path in named:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{flag} {path}: no such file")
    # read before any training, so that a bad file stops the command at once
    other = None
    if args.compare_elmo_with:
        try:
            other = json.loads(Path(args.compare_elmo_with).read_text())
        except json.JSONDecodeError as error:
            raise UsageError(
                f"--compare-elmo-with {args.compare_elmo_with}, line {error.lineno}: not a "
                f"table1.json ({error.msg})"
            ) from None
        if not isinstance(other, dict) or not isinstance(other.get("runs"), dict):
            raise UsageError(
                f'--compare-elmo-with {args.compare_elmo_with}: no "runs" object, not a '
                "table1.json (elmo-table1 writes one beside table1.md)"
            )
    if args.no_train:
        folders = {args.serialization_dir, args.baselines_from or args.serialization_dir}
        for folder in folders - ({args.serialization_dir} if args.runs_from else set()):
            if not os.path.exists(folder):
                raise FileNotFoundError(f"{folder}: no such folder, so no Table 1 runs to tabulate")
        result = table1.collect(
            args.serialization_dir, args.scale, args.seeds, args.baselines_from, args.runs_from
        )
        if not result["table"]:
            raise UsageError(
                f"{args.serialization_dir}: no finished Table 1 run of seeds "
                f"{' '.join(map(str, args.seeds))} at the {args.scale!r} scale (finished: "
                "metrics.json and model.tar.gz written)"
            )
    else:
        tasks = table1.scale_tasks(args.scale, args.tasks)
        # both rows read the word vectors (+ ELMo adds to the baseline's inputs); the smoke scale
        # builds its own from its shipped Wikipedia slice (`table1.run_table`)
        variables = [table1.TASKS[task].word_vectors for task in tasks]
        data = data_dir()
        if data is not None and args.scale != "smoke":  # each run reads the files built here
            build_baseline_vectors(variables, str(data / "wikipedia"))
        result = table1.run_table(
            args.serialization_dir,
            args.scale,
            args.seeds,
            tasks,
            args.rows,
            baselines_from=args.baselines_from,
            runs_from=args.runs_from,
            cuda_device=args.cuda_device,
        )
    table = table1.markdown(result["table"], args.scale, result["runs"], args.baselines_from)
    if other is not None:
        result["elmo_comparison"] = table1.compare_elmo(result["runs"], other)
        result["elmo_compared_with"] = args.compare_elmo_with
        table += table1.comparison_markdown(result["elmo_comparison"], args.compare_elmo_with)
    title = table1.SMOKE_NOTE if args.scale == "smoke" else None
    figure = table1.figure(result["table"], title) if result["table"] else None
    output_dir = args.output_dir or args.serialization_dir
    os.makedirs(output_dir, exist_ok=True)
    for path in report.write_report(output_dir, "table1", result, table, figure, overwrite=True):
        print(path)
    print(table)
