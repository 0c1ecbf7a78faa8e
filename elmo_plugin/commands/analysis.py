"""The Section 5 analyses as `allennlp` subcommands: `elmo-probe pos|wsd`, `elmo-neighbours`,
`elmo-layer-weights`, `elmo-sweep`. Each writes NAME.json, NAME.md and (where the paper has a
figure) NAME.png under `--output-dir`."""

import argparse
import json
import os
from pathlib import Path
from typing import Any, Dict, List

import torch
from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import UsageError, numbered_lines, reports_errors
from elmo_plugin.common.config_env import config_path
from elmo_plugin.common.parsers import COMMANDS, probe_parsers
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive


def _bilm(args: argparse.Namespace):
    return load_bilm_or_archive(args.options_file, args.weight_file, args.archive_file)


def _device(args: argparse.Namespace) -> torch.device:
    return torch.device("cpu" if args.cuda_device < 0 else f"cuda:{args.cuda_device}")


def _bilm_name(args: argparse.Namespace) -> str:
    return args.archive_file or args.weight_file or "shipped biLM"


def _report(args: argparse.Namespace, result: Any, table: str, figure: Any = None) -> None:
    """Write the command's report (json, md, png) to `--output-dir` and show where and what."""
    from elmo_plugin.analysis import report

    for path in report.write_report(
        args.output_dir, args.name, result, table, figure, overwrite=args.overwrite
    ):
        print(path)
    print(table)


@reports_errors("elmo-probe")
def _run_pos(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import probes, report

    result = probes.pos_probe(
        _bilm(args),
        args.train_file,
        args.test_file,
        epochs=args.epochs,
        batch_size=args.batch_size,
        device=_device(args),
        max_train_sentences=args.max_train_sentences,
    )
    result["bilm"] = _bilm_name(args)
    rows = [[layer, f"{100 * acc:.1f}"] for layer, acc in enumerate(result["accuracy_per_layer"])]
    table = report.markdown_table(["biLM layer", "POS accuracy (%)"], rows)
    _report(args, result, table)


@reports_errors("elmo-probe")
def _run_sst(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import probes, report

    result = probes.sst_probe(
        _bilm(args),
        args.train_file,
        args.test_file,
        word_vectors=args.word_vectors,
        epochs=args.epochs,
        batch_size=args.batch_size,
        device=_device(args),
    )
    result["bilm"] = _bilm_name(args)
    rows = [[name, f"{100 * acc:.1f}"] for name, acc in result["accuracy"].items()]
    rows.append(["majority class", f"{100 * result['majority_class_accuracy']:.1f}"])
    table = report.markdown_table(["features (mean over the sentence)", "SST-5 accuracy (%)"], rows)
    _report(args, result, table)


@reports_errors("elmo-probe")
def _run_wsd(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import probes, report

    tests = [probes.WsdData.from_dir(os.path.join(args.eval_dir, name)) for name in args.datasets]
    trains = [probes.WsdData(xml, key) for xml, key in args.train] if args.train else None
    result = probes.wsd_probe(_bilm(args), tests, trains, args.batch_size, _device(args))
    result["bilm"] = _bilm_name(args)
    names = [d.name for d in tests] + ["ALL"]
    rows = [
        [layer] + [f"{scores[n]['f1']:.1f}" for n in names]
        for layer, scores in enumerate(result["scores_per_layer"])
    ]
    table = report.markdown_table(["biLM layer", *[f"{n} F1" for n in names]], rows)
    _report(args, result, table)


@reports_errors("elmo-neighbours")
def _run_neighbours(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import neighbours, report

    corpus = [line.split() for _, line in numbered_lines(args.corpus) if line.strip()]
    result = neighbours.nearest_neighbours(
        _bilm(args),
        args.query.split(),
        args.index,
        corpus,
        layer=args.layer,
        k=args.k,
        batch_size=args.batch_size,
        device=_device(args),
    )
    rows = [
        [n["word"], f"{n['cosine']:.3f}", n["sentence"]] for n in result["contextual_neighbours"]
    ]
    table = f"query: {result['query']} (word: {result['word']}, layer {result['layer']})\n\n"
    table += report.markdown_table(["word", "cosine", "sentence"], rows)
    table += "\ntoken layer (context-free):\n\n" + report.markdown_table(
        ["word", "cosine"],
        [[n["word"], f"{n['cosine']:.3f}"] for n in result["token_layer_neighbours"]],
    )
    _report(args, result, table)


@reports_errors("elmo-layer-weights")
def _run_layer_weights(args: argparse.Namespace) -> None:
    from allennlp.models.archival import load_archive

    from elmo_plugin.analysis import layer_weights, report

    labels = args.labels or [
        os.path.basename(os.path.dirname(os.path.abspath(archive))) for archive in args.archives
    ]
    if len(labels) != len(args.archives):
        raise UsageError(f"{len(labels)} --labels for {len(args.archives)} archives")
    results: Dict[str, List[Dict[str, Any]]] = {}
    for archive, label in zip(args.archives, labels):
        if not os.path.isfile(archive):
            raise FileNotFoundError(f"{archive}: no such archive")
        mixes = layer_weights.mix_weights(load_archive(archive).model)
        if not mixes:
            raise UsageError(f"{archive}: the model has no ELMo mix")
        results[label] = mixes
    rows = [
        [
            label,
            mix.get("placement", mix["name"]),
            " / ".join(f"{w:.3f}" for w in mix["weights"]),
            f"{mix['gamma']:.3f}",
        ]
        for label, mixes in results.items()
        for mix in mixes
    ]
    table = report.markdown_table(["model", "mix", "softmax(w) per layer", "gamma"], rows)
    figure = layer_weights.weights_figure(results)
    _report(args, results, table, figure)


@reports_errors("elmo-sweep")
def _run_sweep(args: argparse.Namespace) -> None:
    from elmo_plugin.analysis import report, sweep

    runs = sweep.grid(args.placement, args.l2, args.layers, args.gamma, args.fraction, args.seeds)
    out = Path(args.serialization_dir)
    run_dirs = [out / run.name for run in runs]
    logged = [log.with_suffix("") for log in out.glob("*.log")]
    progress = sweep.Progress("Sweep runs", run_dirs, logged, sweep.group_key)
    trained = sweep.sweep(
        config_path(args.config),
        args.serialization_dir,
        runs,
        args.overrides,
        fraction_batches_per_epoch=args.fraction_batches_per_epoch,
    )
    records = []
    try:
        for run_dir in run_dirs:  # the sweep trains each run when asked for its record
            unfinished = run_dir in progress.unfinished
            if unfinished:
                progress.start(run_dir, run_dir.name)
            records.append(next(trained))
            if unfinished:
                progress.finish(run_dir)
    finally:  # a failed run's log follower stops too
        progress.close()
    output_dir = args.output_dir or args.serialization_dir
    previous = os.path.join(output_dir, f"{args.name}.json")
    if os.path.isfile(previous):  # a re-run on part of the grid keeps the other rows
        names = {sweep.Run(**_run_fields(r)).name for r in records}
        with open(previous) as handle:
            kept = [
                r
                for r in json.load(handle)["runs"]
                if sweep.Run(**_run_fields(r)).name not in names
            ]
        records = kept + records
    rows = sweep.summarise(records)
    metric = records[0]["metric"]

    def cell(row, key):
        mean = row[f"{key}_mean"]
        return "-" if mean is None else f"{mean:.4f} +/- {row[f'{key}_std']:.4f}"

    table = report.markdown_table(
        ["setting", "seeds", f"best dev {metric}", f"test {metric}"],
        [
            [sweep.label(r["group"]), len(r["seeds"]), cell(r, "best_dev"), cell(r, "test")]
            for r in rows
        ],
    )
    figure = sweep.figure_1(rows, metric) if len(set(args.fraction)) > 1 else None
    result = {"config": args.config, "metric": metric, "runs": records, "summary": rows}
    for path in report.write_report(output_dir, args.name, result, table, figure, overwrite=True):
        print(path)
    print(table)


def _run_fields(record: Dict[str, Any]) -> Dict[str, Any]:
    from elmo_plugin.analysis import sweep

    return {field: record[field] for field in sweep.Run.__dataclass_fields__}


@Subcommand.register("elmo-probe")
class ElmoProbe(Subcommand):
    """Per-layer probes (Sec. 5.3): `pos` (Table 6, linear classifier), `wsd` (Table 5, 1-NN
    over sense centroids), and `sst` (SST-5 sentences, a linear classifier on mean-pooled layers
    and word vectors: how much fine-grained sentiment each carries, for Table 1's SST-5 row).

    Registered as a `Subcommand` with name "elmo-probe".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        probes_by_name = probe_parsers(subparser)
        probes_by_name["pos"].set_defaults(func=_run_pos)
        probes_by_name["sst"].set_defaults(func=_run_sst)
        probes_by_name["wsd"].set_defaults(func=_run_wsd)
        return subparser


@Subcommand.register("elmo-neighbours")
class ElmoNeighbours(Subcommand):
    """Nearest contextual neighbours of a word in context (Table 4), next to the token layer's.

    Registered as a `Subcommand` with name "elmo-neighbours".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run_neighbours)
        return subparser


@Subcommand.register("elmo-layer-weights")
class ElmoLayerWeights(Subcommand):
    """The learned ELMo layer weights and gamma of trained task models (Figure 2).

    Registered as a `Subcommand` with name "elmo-layer-weights".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run_layer_weights)
        return subparser


@Subcommand.register("elmo-sweep")
class ElmoSweep(Subcommand):
    """Train an `_elmo.jsonnet` config over a grid (Tables 2-3, A.2, Figure 1) and tabulate.

    Registered as a `Subcommand` with name "elmo-sweep".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run_sweep)
        return subparser
