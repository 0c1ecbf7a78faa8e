"""`allennlp elmo-config`: where the packaged training configs are."""

import argparse

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.files import reports_errors
from elmo_plugin.common.config_env import CONFIG_DIR, config_names, config_path


@Subcommand.register("elmo-config")
class ElmoConfig(Subcommand):
    """Print the path of a packaged training config (to read or copy it), or list them all.
    `allennlp train` takes the name itself too: `allennlp train snli_esim_elmo -s out
    --include-package elmo_plugin`.

    Registered as a `Subcommand` with name "elmo-config".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Print the path of the packaged config NAME (e.g. snli_esim_elmo), or with no NAME "
            f"list the packaged configs (in {CONFIG_DIR})."
        )
        subparser = parser.add_parser(
            self.name, description=description, help="Find the packaged training configs."
        )
        subparser.add_argument("name", nargs="?", help="a config's name, without .jsonnet")
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-config")
def _run(args: argparse.Namespace) -> None:
    if args.name is None:
        print("\n".join(config_names()))
    else:
        print(config_path(args.name))
