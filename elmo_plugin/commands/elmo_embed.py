"""`allennlp elmo-embed`: the light `elmo-embed` console script (`elmo_bilm.cli.embed`) as an
AllenNLP subcommand (the `allennlp elmo` command that AllenNLP 1.0 dropped)."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.cli.embed import run, takes_seqvec
from elmo_bilm.utils.files import reports_errors
from elmo_plugin.common.parsers import COMMANDS
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive


@Subcommand.register("elmo-embed")
class ElmoEmbed(Subcommand):
    """Embed a file of sentences with a biLM and write the layers to HDF5 (the same arguments and
    output as the `elmo-embed` console script, which starts without importing AllenNLP).

    Registered as a `Subcommand` with name "elmo-embed".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-embed")
def _run(args: argparse.Namespace) -> None:
    if takes_seqvec(args):  # proteins with no biLM named: SeqVec, never the English biLM
        run(args)
        return
    run(args, load_bilm_or_archive(args.options_file, args.weight_file, args.archive_file))
