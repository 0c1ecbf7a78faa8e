"""`allennlp elmo-word-vectors`: context-free word vectors for the baselines (GloVe's stand-in)."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import expand_paths, reports_errors
from elmo_plugin.data.word_vectors import train_word_vectors


@Subcommand.register("elmo-word-vectors")
class ElmoWordVectors(Subcommand):
    """Train skip-gram word2vec vectors (gensim) on a tokenised corpus, streaming it from disk, and
    write them in GloVe's text format for a task config's `WORD_VECTORS_*` variable.

    Registered as a `Subcommand` with name "elmo-word-vectors".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Train word2vec (skip-gram, negative sampling) on CORPUS (one tokenised sentence per "
            "line, plain or .gz: the output of elmo-prepare-corpus; files, globs or directories) and "
            "write OUTPUT as `word v1 ... vd` lines (gzip if it ends in .gz), never overwriting it "
            "unless --overwrite. Memory is bounded by --max-vocab, not by the corpus."
        )
        subparser = parser.add_parser(
            self.name, description=description, help="Train baseline word vectors."
        )
        subparser.add_argument("corpus", nargs="+", help="tokenised corpus files, globs or folders")
        subparser.add_argument("output", help="the vectors file to write, e.g. w2v_300d.txt.gz")
        subparser.add_argument("--dim", type=int, default=300, help="vector size (default 300)")
        subparser.add_argument(
            "--lowercase",
            action="store_true",
            help="lowercase the corpus (for lowercasing configs)",
        )
        subparser.add_argument("--window", type=int, default=5, help="context window (default 5)")
        subparser.add_argument(
            "--min-count", type=int, default=5, help="ignore rarer words (default 5)"
        )
        subparser.add_argument(
            "--max-vocab",
            type=int,
            default=200_000,
            help="most frequent words kept (default 200000)",
        )
        subparser.add_argument("--epochs", type=int, default=5, help="passes (default 5)")
        subparser.add_argument(
            "--workers", type=int, default=1, help="threads (default 1: reproducible output)"
        )
        subparser.add_argument("--seed", type=int, default=1)
        subparser.add_argument("--overwrite", action="store_true")
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-word-vectors")
def _run(args: argparse.Namespace) -> None:
    corpus = [path for item in args.corpus for path in expand_paths(item)]
    train_word_vectors(
        corpus,
        args.output,
        dim=args.dim,
        lowercase=args.lowercase,
        window=args.window,
        min_count=args.min_count,
        max_vocab=args.max_vocab,
        epochs=args.epochs,
        workers=args.workers,
        seed=args.seed,
        overwrite=args.overwrite,
    )
