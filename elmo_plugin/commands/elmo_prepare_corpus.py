"""`allennlp elmo-prepare-corpus`: raw Wikipedia -> sentence-per-line text for `elmo_plugin_lm_corpus`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import reports_errors
from elmo_plugin.common.parsers import COMMANDS
from elmo_plugin.data.wikipedia import prepare_corpus


@Subcommand.register("elmo-prepare-corpus")
class ElmoPrepareCorpus(Subcommand):
    """Sentence-split and tokenise WikiExtractor output offline (spaCy's rule-based English
    tokenizer and sentencizer) into gzip shards of one sentence per line, the `text` format of the
    `elmo_plugin_lm_corpus` reader (`BILM_TRAIN=text::OUTPUT_DIR`).

    Registered as a `Subcommand` with name "elmo-prepare-corpus".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-prepare-corpus")
def _run(args: argparse.Namespace) -> None:
    prepare_corpus(args.inputs, args.output_dir, args.overwrite)
