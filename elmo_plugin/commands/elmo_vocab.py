"""`allennlp elmo-vocab`: a bilm-tf `vocab.txt` for biLM pretraining from a corpus of any size."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import reports_errors
from elmo_plugin.lm.vocab_counts import build_vocab_file


@Subcommand.register("elmo-vocab")
class ElmoVocab(Subcommand):
    """Count the tokens of a corpus in one streaming pass and write the softmax vocabulary as a
    bilm-tf `vocab.txt` (frequency-sorted, `<S>`, `</S>`, `<UNK>` first), for `BILM_VOCAB`.

    Registered as a `Subcommand` with name "elmo-vocab".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Write OUTPUT (a bilm-tf vocab.txt: <S>, </S>, <UNK>, then the tokens by descending count) "
            "for the corpus INPUT: FORMAT::PATH specs as for BILM_TRAIN (comma-separated or several "
            "arguments; PATH a file, directory or glob). Only the counts are held in memory."
        )
        subparser = parser.add_parser(
            self.name, description=description, help="Build a biLM vocab.txt."
        )
        subparser.add_argument("output_file", help="vocab.txt to write (never overwritten)")
        subparser.add_argument(
            "inputs", nargs="+", help="FORMAT::PATH corpus specs, e.g. text::out/wiki"
        )
        subparser.add_argument(
            "--min-count", type=int, default=3, help="drop tokens seen fewer times (default 3)"
        )
        subparser.add_argument(
            "--max-size", type=int, help="keep at most this many tokens (besides the specials)"
        )
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-vocab")
def _run(args: argparse.Namespace) -> None:
    specs = [spec for item in args.inputs for spec in item.split(",") if spec]
    build_vocab_file(specs, args.output_file, min_count=args.min_count, max_size=args.max_size)
