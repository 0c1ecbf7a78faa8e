"""`allennlp elmo-prepare-corpus`: raw Wikipedia -> sentence-per-line text for `elmo_plugin_lm_corpus`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import reports_errors
from elmo_plugin.data.wikipedia import prepare_corpus


@Subcommand.register("elmo-prepare-corpus")
class ElmoPrepareCorpus(Subcommand):
    """Sentence-split and tokenise WikiExtractor output offline (spaCy's rule-based English
    tokenizer and sentencizer) into gzip shards of one sentence per line, the `text` format of the
    `elmo_plugin_lm_corpus` reader (`BILM_TRAIN=text::OUTPUT_DIR`).

    Registered as a `Subcommand` with name "elmo-prepare-corpus".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "For each WikiExtractor file (<doc ...> blocks of raw paragraphs, plain or .gz; files, globs "
            "or folders, searched recursively: a file of a folder is named by its path below it, "
            "AA/wiki_00 -> AA_wiki_00), write OUTPUT_DIR/<name>.txt.gz with one tokenised sentence per "
            "line. "
            "Titles are dropped. Existing outputs are kept (an interrupted run resumes) unless --overwrite."
        )
        subparser = parser.add_parser(
            self.name, description=description, help="Prepare a raw-text biLM corpus."
        )
        subparser.add_argument(
            "inputs", nargs="+", help="WikiExtractor files, globs or directories"
        )
        subparser.add_argument("output_dir", help="directory for the .txt.gz shards")
        subparser.add_argument("--overwrite", action="store_true", help="replace existing outputs")
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-prepare-corpus")
def _run(args: argparse.Namespace) -> None:
    prepare_corpus(args.inputs, args.output_dir, args.overwrite)
