"""AllenNLP's own subcommands' parsers (`train`, `evaluate`, `predict`, ...) as data, so that
`elmo-plugin CMD --help` answers without importing AllenNLP (`elmo_plugin.common.command_line`'s
fast path; AllenNLP's `allennlp.commands` imports its models and training stack, ~8 s).

`allennlp_parsers.json` beside this module is generated from AllenNLP by `snapshot()`
(`python -m elmo_plugin.common.allennlp_parsers` rewrites it): each command's help line,
description, mutually exclusive groups and arguments, the arguments' help as AllenNLP's parser
holds it (its `(default = X)` appended). `add_parser` rebuilds a command's parser from that, so
argparse prints the same help and the same errors. The fast path is taken only with the AllenNLP
version the file names (`command_line.known_command_line`); `tests/elmo_plugin/common/test_start_up.py`
regenerates the file and compares, and compares every command's `--help` with AllenNLP's.

Importing this module imports the standard library only; `snapshot()` imports AllenNLP.
"""

import argparse
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional

SNAPSHOT = Path(__file__).with_name("allennlp_parsers.json")

# AllenNLP's own subcommands and their one-line help, as `allennlp --help` of `ALLENNLP_VERSION`
# (with allennlp-models, which adds none) lists them; the fast path is taken with that version only
ALLENNLP_VERSION = "2.10.1"
ALLENNLP_COMMANDS: Dict[str, str] = {
    "build-vocab": "Build a vocabulary from an experiment config file.",
    "cached-path": "Cache remote files to the AllenNLP cache.",
    "checklist": "Run a trained model through a checklist suite.",
    "count-instances": "Count the number of training instances in an experiment config file.",
    "diff": "Display a diff between two model checkpoints.",
    "evaluate": "Evaluate the specified model + dataset(s).",
    "find-lr": "Find a learning rate range.",
    "predict": "Use a trained model to make predictions.",
    "print-results": "Print results from allennlp serialization directories to the console.",
    "push-to-hf": "Push a model to the Hugging Face Hub. Pushing your models to the Hugging Face "
    "Hub ([hf.co](https://hf.co/)) allows you to share your models with others. On top of that, "
    "you can try the models directly in the browser with the available widgets. Before running "
    "this command, login to Hugging Face with `huggingface-cli login`. You can specify either a "
    "`serialization_dir` or an `archive_path`, but using the first option is recommended since "
    "the `serialization_dir` contains more useful information such as metrics and TensorBoard "
    "traces.",
    "test-install": "Test AllenNLP installation.",
    "train": "Train a model.",
}

# AllenNLP's commands whose parser depends on the machine, left to AllenNLP: `cached-path`'s
# default folder comes from the environment, `checklist`'s arguments from whether the checklist
# package is installed
LEFT_OUT = ("cached-path", "checklist")

# argparse's action classes that the snapshot can describe, by the `action=` name that makes them
_ACTIONS: Dict[type, str] = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse._AppendAction: "append",
    argparse._CountAction: "count",
}
# the `type=` callables the snapshot can describe, by name
_TYPES: Dict[str, Any] = {"str": str, "int": int, "float": float}
# parser settings the snapshot does not record: each must be argparse's default
_PARSER_DEFAULTS = {
    "usage": None,
    "epilog": None,
    "prefix_chars": "-",
    "fromfile_prefix_chars": None,
    "add_help": True,
    "allow_abbrev": True,
    "formatter_class": argparse.HelpFormatter,
    "argument_default": None,
}


def _describe_action(action: argparse.Action, group: Optional[int]) -> Dict[str, Any]:
    """One argument as JSON; a kind of argument the snapshot cannot rebuild raises ValueError."""
    kind = _ACTIONS.get(type(action))
    if kind is None:
        raise ValueError(f"{action.option_strings or action.dest}: action {type(action)}")
    type_name = getattr(action.type, "__name__", None) if action.type is not None else None
    if action.type is not None and _TYPES.get(str(type_name)) is not action.type:
        raise ValueError(f"{action.option_strings or action.dest}: type {action.type!r}")
    default = action.default
    json.dumps(default)  # a default JSON cannot hold raises here, not in the file
    return {
        "kind": kind,
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "nargs": action.nargs,
        "const": action.const,
        "default": default,
        "type": type_name,
        "choices": list(action.choices) if action.choices is not None else None,
        "required": action.required,
        "help": action.help,
        "metavar": action.metavar,
        "group": group,
    }


def describe(parser: argparse.ArgumentParser, help_line: str) -> Dict[str, Any]:
    """A subcommand's `parser` (and its `help_line` in the command list) as JSON."""
    for name, value in _PARSER_DEFAULTS.items():
        if getattr(parser, name) != value:
            raise ValueError(f"{parser.prog}: {name} = {getattr(parser, name)!r}")
    if any(
        group.title not in ("positional arguments", "options") for group in parser._action_groups
    ):
        raise ValueError(f"{parser.prog}: an argument group of its own")
    groups = parser._mutually_exclusive_groups
    group_of = {
        id(action): index for index, group in enumerate(groups) for action in group._group_actions
    }
    actions = [
        _describe_action(action, group_of.get(id(action)))
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
    ]
    return {
        "help": help_line,
        "description": parser.description,
        "groups": [{"required": group.required} for group in groups],
        "actions": actions,
    }


def add_include_package(subparser: argparse.ArgumentParser) -> None:
    """`--include-package`, as AllenNLP's `main` adds it to every command that
    `requires_plugins`."""
    subparser.add_argument(
        "--include-package",
        type=str,
        action="append",
        default=[],
        help="additional packages to include",
    )


def snapshot() -> Dict[str, Any]:
    """AllenNLP's own subcommands' parsers as `allennlp.commands.parse_args` builds them (with
    `--include-package` for those that `requires_plugins`), and AllenNLP's version. Imports
    AllenNLP; `LEFT_OUT` and a plugin's subcommands are left out."""
    from allennlp import __version__
    from allennlp.commands import ArgumentParserWithDefaults
    from allennlp.commands.subcommand import Subcommand

    parser = ArgumentParserWithDefaults(description="Run AllenNLP", prog="allennlp")
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    commands: Dict[str, Any] = {}
    for name in sorted(set(ALLENNLP_COMMANDS) - set(LEFT_OUT)):
        subcommand_class: Any = Subcommand.by_name(name)
        subparser = subcommand_class().add_subparser(subparsers)
        if subcommand_class.requires_plugins:
            add_include_package(subparser)
        help_line = next(a.help for a in subparsers._choices_actions if a.dest == name)
        commands[name] = describe(subparser, str(help_line))
    return {"allennlp": __version__, "commands": commands}


@lru_cache(maxsize=1)
def load() -> Dict[str, Any]:
    """The snapshot shipped beside this module (`allennlp_parsers.json`): `{"allennlp": VERSION,
    "commands": {NAME: {"help", "description", "groups", "actions"}}}`."""
    data: Dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return data


def add_parser(subparsers: Any, name: str) -> argparse.ArgumentParser:
    """AllenNLP's subcommand `name` under `subparsers`, rebuilt from the snapshot: the same
    arguments, help and groups as AllenNLP's parser."""
    entry = load()["commands"][name]
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, description=entry["description"], help=entry["help"]
    )
    groups = [
        parser.add_mutually_exclusive_group(required=group["required"]) for group in entry["groups"]
    ]
    for action in entry["actions"]:
        container: Any = parser if action["group"] is None else groups[action["group"]]
        kwargs: Dict[str, Any] = {"action": action["kind"], "help": action["help"]}
        if action["kind"] in ("store", "append"):
            kwargs.update(nargs=action["nargs"], metavar=action["metavar"])
            kwargs.update(choices=action["choices"])
            kwargs["type"] = _TYPES[action["type"]] if action["type"] else None
        if action["kind"] == "store_const":
            kwargs["const"] = action["const"]
        kwargs["default"] = action["default"]
        names: List[str] = action["option_strings"]
        if names:
            kwargs.update(dest=action["dest"], required=action["required"])
        else:
            names = [action["dest"]]
        # argparse's own `add_argument`: the help is AllenNLP's as it stands, its default added
        argparse._ActionsContainer.add_argument(container, *names, **kwargs)
    return parser


def main() -> None:
    """Rewrite `allennlp_parsers.json` from the installed AllenNLP."""
    text = json.dumps(snapshot(), indent=1, sort_keys=True) + "\n"
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    main()
