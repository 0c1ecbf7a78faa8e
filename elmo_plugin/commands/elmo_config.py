"""`allennlp elmo-config`: where the packaged training configs are, and what one resolves to."""

import argparse
import json

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import UsageError, reports_errors
from elmo_plugin.common.config_env import config_path, variable_sources
from elmo_plugin.common.config_names import config_names
from elmo_plugin.common.parsers import COMMANDS, CONFIG_USAGE


@Subcommand.register("elmo-config")
class ElmoConfig(Subcommand):
    """Print the path of a packaged training config (to read or copy it), or list them all;
    with `--resolved`, the JSON AllenNLP will build from a config and each variable's source.
    `allennlp train` takes the name itself too: `allennlp train snli_esim_elmo -s out
    --include-package elmo_plugin`.

    Registered as a `Subcommand` with name "elmo-config".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = COMMANDS[self.name].add_parser(parser, self.name)
        subparser.set_defaults(func=_run)
        return subparser


@reports_errors("elmo-config")
def _run(args: argparse.Namespace) -> None:
    if args.name is None:
        if args.resolved:
            raise UsageError(f"--resolved needs a config NAME or path (usage: {CONFIG_USAGE})")
        print("\n".join(config_names()))
    elif not args.resolved:
        print(config_path(args.name))
    else:
        print(resolved(args.name))


def resolved(name: str) -> str:
    """The config `name` as AllenNLP builds it, as text: a `//` line per variable (value and
    source), then the JSON."""
    from allennlp.common import Params

    path = config_path(name)
    try:
        params = Params.from_file(path).as_dict(quiet=True)
    except RuntimeError as error:  # jsonnet's own errors (an undefined variable, a syntax error)
        raise UsageError(f"{path}: {str(error).strip().splitlines()[0]}") from None
    lines = [f"// {path}, as AllenNLP builds it; its variables:"]
    lines += [f"// {var} = {value}  ({source})" for var, value, source in variable_sources(path)]
    return "\n".join([*lines, json.dumps(params, indent=2)])
