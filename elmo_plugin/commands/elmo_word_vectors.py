"""`allennlp elmo-word-vectors`: context-free word vectors for the baselines (GloVe's stand-in)."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import expand_paths, reports_errors
from elmo_plugin.common.parsers import COMMANDS
from elmo_plugin.data.word_vectors import train_word_vectors


@Subcommand.register("elmo-word-vectors")
class ElmoWordVectors(Subcommand):
    """Train skip-gram word2vec vectors (gensim) on a tokenised corpus, streaming it from disk, and
    write them in GloVe's text format for a task config's `WORD_VECTORS_*` variable.

    Registered as a `Subcommand` with name "elmo-word-vectors".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
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
