"""`allennlp elmo-vocab`: a bilm-tf `vocab.txt` for biLM pretraining from a corpus of any size."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import reports_errors
from elmo_plugin.common.parsers import COMMANDS
from elmo_plugin.lm.vocab_counts import build_vocab_file


@Subcommand.register("elmo-vocab")
class ElmoVocab(Subcommand):
    """Count the tokens of a corpus in one streaming pass and write the softmax vocabulary as a
    bilm-tf `vocab.txt` (frequency-sorted, `<S>`, `</S>`, `<UNK>` first), for `BILM_VOCAB`.

    Registered as a `Subcommand` with name "elmo-vocab".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-vocab")
def _run(args: argparse.Namespace) -> None:
    specs = [spec for item in args.inputs for spec in item.split(",") if spec]
    build_vocab_file(specs, args.output_file, min_count=args.min_count, max_size=args.max_size)
