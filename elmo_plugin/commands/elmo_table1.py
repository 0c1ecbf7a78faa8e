"""`allennlp elmo-table1`: the paper's Table 1 (six tasks, baseline vs + ELMo, over seeds)."""

import argparse
import contextlib
import json
import os
from pathlib import Path

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import UsageError, reports_errors
from elmo_plugin.common.command_line import quiet_loggers
from elmo_plugin.common.parsers import COMMANDS


@Subcommand.register("elmo-table1")
class ElmoTable1(Subcommand):
    """Train or resume the Table 1 grid (six tasks x {baseline, + ELMo} x seeds) at a named scale
    and write table1.json, table1.md and table1.png beside the paper's figures.

    Registered as a `Subcommand` with name "elmo-table1".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-table1")
def _run(args: argparse.Namespace) -> None:
    with contextlib.nullcontext() if args.verbose else quiet_loggers():
        _table(args)


def _table(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import report, table1
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
