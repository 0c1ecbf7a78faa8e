"""`allennlp elmo-config`: where the packaged training configs are, and what one resolves to."""

import argparse
import json
import sys
from typing import Any, List, NoReturn, Optional, Sequence, Tuple

from allennlp.commands.subcommand import Subcommand

from elmo_bilm.utils.files import UsageError, reports_errors
from elmo_plugin.common.config_env import CONFIG_DIR, config_names, config_path, variable_sources

USAGE = "allennlp elmo-config [NAME] [--resolved]"


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make `parser` answer bad arguments in one line `elmo-config: error: ...` with exit status
    1: a second name, an unknown flag (argparse left those to the top-level parser, whose answer
    named neither the command nor its usage, with status 2)."""
    parse = parser.parse_known_args

    def error(message: str) -> NoReturn:
        sys.exit(f"elmo-config: error: {message} (usage: {USAGE})")

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


@Subcommand.register("elmo-config")
class ElmoConfig(Subcommand):
    """Print the path of a packaged training config (to read or copy it), or list them all;
    with `--resolved`, the JSON AllenNLP will build from a config and each variable's source.
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
        subparser.add_argument(
            "name", nargs="?", help="a config's name, without .jsonnet, or a config file's path"
        )
        subparser.add_argument(
            "--resolved",
            action="store_true",
            help="print the config as AllenNLP will build it (JSON, after the plugin's defaults, "
            "the environment and jsonnet), preceded by `//` lines naming each variable's value "
            "and source; the output is itself a config `allennlp train` reads",
        )
        subparser.set_defaults(func=_run)
        _one_line_errors(subparser)
        return subparser


@reports_errors("elmo-config")
def _run(args: argparse.Namespace) -> None:
    if args.name is None:
        if args.resolved:
            raise UsageError(f"--resolved needs a config NAME or path (usage: {USAGE})")
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
