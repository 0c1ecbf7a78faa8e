"""The `allennlp elmo-*` subcommands' names, help lines, descriptions and arguments, without
AllenNLP: each `Subcommand` class builds its parser from here, and so does `elmo-plugin`'s fast
path (`elmo_plugin.common.command_line`), which answers `--help` and `elmo-config` before
AllenNLP is imported. One definition for both, so that both print the same.

Importing this module imports the standard library and the core's torch-free checks
(`elmo_bilm.utils.checks`: its argparse types) only. The few commands whose arguments come
from the torch-only core (`elmo-embed`, `elmo-probe`, `elmo-neighbours`) import it when their
parser is built, never for another command's. A value that lives in a module importing AllenNLP
(the Table 1 scales and tasks, the WSD datasets, the configs' folder) is repeated here, and the
tests compare the two paths' output.
"""

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

from elmo_bilm.utils.checks import count_argument, number_argument

# the packaged training configs (`elmo_plugin.common.config_env.CONFIG_DIR`)
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"

CONFIG_USAGE = "allennlp elmo-config [NAME] [--resolved]"

# `sorted(elmo_plugin.analysis.table1.SCALES)` and `elmo_plugin.analysis.table1.TASKS`' keys
TABLE1_SCALES = ("cpu", "cpu_long", "full", "smoke")
TABLE1_TASKS = ("squad", "snli", "srl", "coref", "ner", "sst")
# `elmo_plugin.analysis.probes.WSD_DATASETS`
WSD_DATASETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")
# `elmo_plugin.analysis.sweep.BASELINE`
SWEEP_BASELINE = "none"


@dataclass(frozen=True)
class Command:
    """One `elmo-*` subcommand's parser: its one-line `help` (AllenNLP's command list), its
    `description` (a string, or a function for one that lives in a torch module) and the function
    that adds its arguments."""

    help: str
    description: Any
    arguments: Callable[[argparse.ArgumentParser], None]

    def add_parser(self, subparsers: Any, name: str) -> argparse.ArgumentParser:
        """The command's parser `name` under `subparsers`, with its arguments."""
        description = self.description() if callable(self.description) else self.description
        parser: argparse.ArgumentParser = subparsers.add_parser(
            name, description=description, help=self.help
        )
        self.arguments(parser)
        return parser


def data_default(*parts: str) -> str:
    """A default input under `$ELMO_PLUGIN_DATA` (made absolute, as
    `elmo_plugin.common.config_env.data_dir` makes it), or relative to the current folder."""
    value = os.environ.get("ELMO_PLUGIN_DATA", "")
    data = os.path.abspath(os.path.expanduser(value)) if value else ""
    return os.path.join(data, *parts)


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make `parser` answer bad arguments in one line `elmo-config: error: ...` with exit status
    1: a second name, an unknown flag (argparse left those to the top-level parser, whose answer
    named neither the command nor its usage, with status 2)."""
    parse = parser.parse_known_args

    def error(message: str) -> NoReturn:
        sys.exit(f"elmo-config: error: {message} (usage: {CONFIG_USAGE})")

    def parse_known_args(
        args: Optional[Sequence[str]] = None, namespace: Any = None
    ) -> Tuple[argparse.Namespace, List[str]]:
        known, extras = parse(args, namespace)
        flags = [extra for extra in extras if extra.startswith("-")]
        if flags:
            error(f"unknown option {flags[0]}")
        if extras:
            names = [known.name, *extras]
            error(f"takes one config name or path, got {len(names)}: {' '.join(names)}")
        return known, extras

    parser.error = error  # type: ignore[method-assign]
    parser.parse_known_args = parse_known_args  # type: ignore[method-assign,assignment]


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-config [NAME] [--resolved]`, bad arguments answered in one line."""
    parser.add_argument(
        "name", nargs="?", help="a config's name, without .jsonnet, or a config file's path"
    )
    parser.add_argument(
        "--resolved",
        action="store_true",
        help="print the config as AllenNLP will build it (JSON, after the plugin's defaults, "
        "the environment and jsonnet), preceded by `//` lines naming each variable's value "
        "and source; the output is itself a config `allennlp train` reads",
    )
    _one_line_errors(parser)


def _embed_description() -> str:
    from elmo_bilm.cli.embed import DESCRIPTION

    return DESCRIPTION


def embed_arguments(parser: argparse.ArgumentParser) -> None:
    """The `elmo-embed` console script's arguments, plus `--archive-file`."""
    from elmo_bilm.cli.embed import add_arguments

    add_arguments(parser)
    parser.add_argument(
        "--archive-file", help="an elmo_plugin_bilm model.tar.gz instead of bilm-tf files"
    )


def export_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-export ARCHIVE_FILE OUTPUT_DIR`."""
    parser.add_argument("archive_file", help="model.tar.gz of an elmo_plugin_bilm run")
    parser.add_argument("output_dir", help="directory for options.json, weights.hdf5, vocab.txt")


def prepare_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-prepare-corpus INPUTS... OUTPUT_DIR [--overwrite]`."""
    parser.add_argument("inputs", nargs="+", help="WikiExtractor files, globs or directories")
    parser.add_argument("output_dir", help="directory for the .txt.gz shards")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")


def table1_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-table1 -s DIR` and the grid's options."""
    parser.add_argument("-s", "--serialization-dir", required=True, help="one folder per run")
    parser.add_argument("--scale", choices=list(TABLE1_SCALES), default="cpu")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=list(TABLE1_TASKS),
        help="default: all six (at the smoke scale, ner only when CoNLL-2003 is given)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        choices=["baseline", "elmo"],
        default=["baseline", "elmo"],
        help="train these rows only (e.g. elmo with another biLM)",
    )
    parser.add_argument("--output-dir", help="where table1.json / .md / .png go (default: -s)")
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="tabulate the finished runs only (e.g. while the grid trains in another process)",
    )
    parser.add_argument(
        "--baselines-from",
        metavar="DIR_OR_JSON",
        help="tabulate the baseline runs of another table's folder, or of the table1.json it "
        "wrote, instead of -s's (e.g. -s holds + ELMo with a larger biLM, trained with "
        "--rows elmo)",
    )
    parser.add_argument(
        "--runs-from",
        nargs="+",
        default=[],
        metavar="JSON",
        help="table1.json files of earlier tables of this one (e.g. written on a machine whose "
        "run folders are gone): their run records count for the runs no folder holds",
    )
    parser.add_argument(
        "--compare-elmo-with",
        metavar="JSON",
        help="another table1.json (e.g. the same tasks with another biLM): compare its + ELMo "
        "row with this table's, per task (means, difference, Welch's t-test)",
    )
    parser.add_argument(
        "--cuda-device",
        type=count_argument(-1),
        default=-1,
        help="train on this GPU (default -1: the CPU); the scale's settings stay the same",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show other libraries' INFO logging (gensim's word2vec, Ray, AllenNLP) "
        "on the console too (each run's own output is in its log either way)",
    )


def vocab_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-vocab OUTPUT INPUTS... [--min-count N] [--max-size N]`."""
    parser.add_argument("output_file", help="vocab.txt to write (never overwritten)")
    parser.add_argument("inputs", nargs="+", help="FORMAT::PATH corpus specs, e.g. text::out/wiki")
    parser.add_argument(
        "--min-count",
        type=count_argument(),
        default=3,
        help="drop tokens seen fewer times (default 3)",
    )
    parser.add_argument(
        "--max-size",
        type=count_argument(),
        help="keep at most this many tokens (besides the specials)",
    )


def word_vectors_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-word-vectors CORPUS... OUTPUT` and word2vec's options."""
    parser.add_argument("corpus", nargs="+", help="tokenised corpus files, globs or folders")
    parser.add_argument("output", help="the vectors file to write, e.g. w2v_300d.txt.gz")
    parser.add_argument(
        "--dim", type=count_argument(), default=300, help="vector size (default 300)"
    )
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="lowercase the corpus (for lowercasing configs)",
    )
    parser.add_argument(
        "--window", type=count_argument(), default=5, help="context window (default 5)"
    )
    parser.add_argument(
        "--min-count", type=count_argument(), default=5, help="ignore rarer words (default 5)"
    )
    parser.add_argument(
        "--max-vocab",
        type=count_argument(),
        default=200_000,
        help="most frequent words kept (default 200000)",
    )
    parser.add_argument("--epochs", type=count_argument(), default=5, help="passes (default 5)")
    parser.add_argument(
        "--workers",
        type=count_argument(),
        default=1,
        help="threads (default 1: reproducible output)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--overwrite", action="store_true")


def _bilm_arguments(parser: argparse.ArgumentParser) -> None:
    """The core's biLM options (batch size 64) plus `--archive-file`, as
    `elmo_plugin.modules.bilm_loading.add_bilm_arguments` adds them."""
    from elmo_bilm.cli.arguments import add_bilm_arguments

    add_bilm_arguments(parser, 64)
    parser.add_argument(
        "--archive-file", help="an elmo_plugin_bilm model.tar.gz; none: the shipped biLM"
    )


def _include_package_argument(parser: argparse.ArgumentParser) -> None:
    """`--include-package` after a probe's name: allennlp adds it to `elmo-probe` alone, so the
    nested `pos` / `wsd` parsers would refuse it where every other command takes it."""
    parser.add_argument(
        "--include-package",
        action="append",
        default=argparse.SUPPRESS,  # keeps one given before the probe's name
        help="additional packages to include (as for every allennlp command)",
    )


def _output_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--output-dir", required=True, help="where NAME.json / .md / .png go")
    parser.add_argument("--name", default=name, help=f"file name stem (default {name})")
    parser.add_argument("--overwrite", action="store_true", help="replace existing result files")


def optional_bool(text: str) -> bool:
    """`true` / `false` (a `--gamma` value of `elmo-sweep`)."""
    if text not in ("true", "false"):
        raise argparse.ArgumentTypeError("true or false")
    return text == "true"


def probe_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-probe pos|sst|wsd` and each probe's options."""
    tasks = parser.add_subparsers(title="probe", dest="probe", required=True)
    pos = tasks.add_parser("pos", help="POS tagging, a linear classifier on each layer (Table 6)")
    _bilm_arguments(pos)
    _include_package_argument(pos)
    _output_arguments(pos, "pos_probe")
    pos.add_argument(
        "--train-file", default=data_default("ud_english_ewt", "en_ewt-ud-train.conllu")
    )
    pos.add_argument("--test-file", default=data_default("ud_english_ewt", "en_ewt-ud-test.conllu"))
    pos.add_argument("--epochs", type=count_argument(), default=10)
    pos.add_argument(
        "--max-train-sentences", type=count_argument(), help="only the first N training sentences"
    )
    sst = tasks.add_parser(
        "sst", help="SST-5 sentences, a linear classifier on mean-pooled vectors (Table 1)"
    )
    _bilm_arguments(sst)
    _include_package_argument(sst)
    _output_arguments(sst, "sst_probe")
    sst.add_argument("--train-file", default=data_default("sst", "train.txt"))
    sst.add_argument("--test-file", default=data_default("sst", "test.txt"))
    sst.add_argument("--word-vectors", help="context-free vectors to compare (GloVe text format)")
    sst.add_argument("--epochs", type=count_argument(), default=50)
    wsd = tasks.add_parser("wsd", help="WSD, nearest sense centroid on each layer (Table 5)")
    _bilm_arguments(wsd)
    _include_package_argument(wsd)
    _output_arguments(wsd, "wsd_probe")
    wsd.add_argument("--eval-dir", default=data_default("wsd_eval", "Evaluation_Datasets"))
    wsd.add_argument("--datasets", nargs="+", default=list(WSD_DATASETS))
    wsd.add_argument(
        "--train",
        nargs=2,
        action="append",
        metavar=("DATA_XML", "GOLD_KEY"),
        help="training data (e.g. SemCor); without it: leave one dataset out",
    )


def probe_parsers(parser: argparse.ArgumentParser) -> Dict[str, argparse.ArgumentParser]:
    """The probes' parsers under `elmo-probe`'s `parser`, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise ValueError("elmo-probe has no probes")


def neighbours_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-neighbours QUERY INDEX CORPUS` and the biLM's options."""
    parser.add_argument("query", help="a whitespace-tokenised sentence")
    parser.add_argument(
        "index", type=count_argument(0), help="0-based index of the word in the query"
    )
    parser.add_argument("corpus", help="text file, one tokenised sentence per line")
    parser.add_argument("--layer", type=int, default=-1, help="biLM layer (default: top)")
    parser.add_argument("-k", type=count_argument(), default=5, help="neighbours to list")
    _bilm_arguments(parser)
    _output_arguments(parser, "neighbours")


def layer_weights_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-layer-weights ARCHIVES... [--labels ...]`."""
    parser.add_argument("archives", nargs="+", help="model.tar.gz files of trained task models")
    parser.add_argument(
        "--labels", nargs="+", help="one name per archive (default: its folder's name)"
    )
    _output_arguments(parser, "layer_weights")


def sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """`elmo-sweep CONFIG -s DIR` and the grid's axes."""
    parser.add_argument(
        "config", help="an *_elmo.jsonnet config: a path, or a packaged config's name"
    )
    parser.add_argument("-s", "--serialization-dir", required=True, help="one folder per run")
    parser.add_argument(
        "--placement",
        nargs="+",
        default=[None],
        help=f"input / output / both / {SWEEP_BASELINE} (baseline)",
    )
    parser.add_argument("--lambda", dest="l2", nargs="+", type=number_argument(0), default=[None])
    parser.add_argument("--layers", nargs="+", choices=["all", "top"], default=[None])
    parser.add_argument("--gamma", nargs="+", type=optional_bool, default=[None])
    parser.add_argument(
        "--fraction",
        nargs="+",
        type=number_argument(fraction=True),
        default=[1.0],
        help="of the training set",
    )
    parser.add_argument(
        "--fraction-batches-per-epoch",
        type=count_argument(),
        help="an epoch of a run on a fraction < 1 is this many batches (the loader cycles "
        "through the subset), so that patience and the epoch cap allow comparable training "
        "on small subsets (default: one pass over the subset)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[13370])
    parser.add_argument("--overrides", help="JSON overrides for every run, e.g. epochs")
    parser.add_argument("--output-dir", help="report folder (default: the serialization dir)")
    parser.add_argument("--name", default="sweep")


COMMANDS: Dict[str, Command] = {
    "elmo-config": Command(
        help="Find the packaged training configs.",
        description="Print the path of the packaged config NAME (e.g. snli_esim_elmo), or with "
        f"no NAME list the packaged configs (in {CONFIG_DIR}).",
        arguments=config_arguments,
    ),
    "elmo-embed": Command(
        help="Embed sentences with ELMo.",
        description=_embed_description,
        arguments=embed_arguments,
    ),
    "elmo-export": Command(
        help="Export a biLM to bilm-tf files.",
        description="Write options.json, weights.hdf5 and vocab.txt (bilm-tf layout) of an "
        "elmo_plugin_bilm model.tar.gz into OUTPUT_DIR. The softmax goes into weights.hdf5 as the "
        "extra datasets softmax/W and softmax/b (in vocab.txt order), which bilm-tf readers "
        "ignore.",
        arguments=export_arguments,
    ),
    "elmo-layer-weights": Command(
        help="learned layer weights",
        description="The learned ELMo layer weights and gamma of trained task models (Figure 2).",
        arguments=layer_weights_arguments,
    ),
    "elmo-neighbours": Command(
        help="nearest neighbours",
        description="Nearest contextual neighbours of a word in context (Table 4), next to the "
        "token layer's.",
        arguments=neighbours_arguments,
    ),
    "elmo-prepare-corpus": Command(
        help="Prepare a raw-text biLM corpus.",
        description="For each WikiExtractor file (<doc ...> blocks of raw paragraphs, plain or "
        ".gz; files, globs or folders, searched recursively: a file of a folder is named by its "
        "path below it, AA/wiki_00 -> AA_wiki_00), write OUTPUT_DIR/<name>.txt.gz with one "
        "tokenised sentence per line. Titles are dropped. Existing outputs are kept (an "
        "interrupted run resumes) unless --overwrite.",
        arguments=prepare_corpus_arguments,
    ),
    "elmo-probe": Command(
        help="biLM layer probes",
        description="Per-layer probes (Sec. 5.3): `pos` (Table 6, linear classifier), `wsd` "
        "(Table 5, 1-NN over sense centroids), and `sst` (SST-5 sentences, a linear classifier "
        "on mean-pooled layers and word vectors: how much fine-grained sentiment each carries, "
        "for Table 1's SST-5 row).",
        arguments=probe_arguments,
    ),
    "elmo-sweep": Command(
        help="ablation sweeps",
        description="Train an `_elmo.jsonnet` config over a grid (Tables 2-3, A.2, Figure 1) and "
        "tabulate.",
        arguments=sweep_arguments,
    ),
    "elmo-table1": Command(
        help="Table 1.",
        description="Train every run of the Table 1 grid that is not finished yet (an interrupted "
        "run continues with --recover) and tabulate test metrics: baseline and + ELMo mean +/- "
        "std over seeds, the increase and the relative error reduction, beside the paper's. "
        "`--scale cpu`: subsets and epoch caps for one core (about 45 min a run at most); "
        "`--scale full`: the configs as they are, on the data their variables name; "
        "`--scale smoke`: a taste in minutes on the slices shipped with the plugin (not "
        "comparable to the paper). Builds the baselines' word vectors first when their "
        "default files are missing.",
        arguments=table1_arguments,
    ),
    "elmo-vocab": Command(
        help="Build a biLM vocab.txt.",
        description="Write OUTPUT (a bilm-tf vocab.txt: <S>, </S>, <UNK>, then the tokens by "
        "descending count) for the corpus INPUT: FORMAT::PATH specs as for BILM_TRAIN "
        "(comma-separated or several arguments; PATH a file, directory or glob). Only the counts "
        "are held in memory.",
        arguments=vocab_arguments,
    ),
    "elmo-word-vectors": Command(
        help="Train baseline word vectors.",
        description="Train word2vec (skip-gram, negative sampling) on CORPUS (one tokenised "
        "sentence per line, plain or .gz: the output of elmo-prepare-corpus; files, globs or "
        "directories) and write OUTPUT as `word v1 ... vd` lines (gzip if it ends in .gz), never "
        "overwriting it unless --overwrite. Memory is bounded by --max-vocab, not by the corpus.",
        arguments=word_vectors_arguments,
    ),
}
