"""ELMo (Peters et al. 2018) for AllenNLP 2.10: the ELMo components, the biLM language model, the
`allennlp elmo-*` commands and the paper's six task models.

Importing the package registers every component, whichever way it is loaded (`--include-package
elmo_plugin`, a plugins file, or `import elmo_plugin` in a script), and installs the few global
hooks listed in `elmo_plugin.hooks`. The torch-only biLM core (no AllenNLP) is the `elmo_bilm`
package.

Two processes defer that: the `elmo-plugin` console script, whose `main`
(`elmo_plugin.common.command_line`) first answers the commands that need no model (`--help`,
`elmo-config`) without importing AllenNLP, and calls `register()` for every other command; and
the `allennlp` command asked for help (`allennlp --help`, `allennlp elmo-config --help`), which
exits once its parser has printed the help, so that importing the package registers the `elmo-*`
commands only (`register_commands()`) and no hook or component (`register()` still does it all).
"""

from importlib import metadata as _metadata

try:  # the installed distribution's version (pyproject.toml)
    __version__ = _metadata.version("elmo_plugin")
except _metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
    __version__ = "unknown"


import importlib
import sys
from pathlib import Path

# the modules whose import registers the plugin's components, and the names taken from each
_COMPONENTS = (
    ("elmo_plugin.data.subset_reader", ("SubsetReader",)),
    ("elmo_plugin.data.token_indexers", ("CappedCharactersIndexer",)),
    ("elmo_plugin.data.tokenizers", ("SpacyBlankTokenizer",)),
    ("elmo_plugin.lm", ("BiLmLanguageModel", "BilmTfVocabulary", "LmCorpusReader")),
    (
        "elmo_plugin.modules.seq2seq_encoders",
        (
            "OutputElmoEncoder",
            "PaddedAlternatingLstmEncoder",
            "PaddedGruEncoder",
            "PaddedLstmEncoder",
        ),
    ),
    ("elmo_plugin.modules.text_field_embedders", ("ElmoPlacementEmbedder",)),
    ("elmo_plugin.token_embedders", ("ElmoPluginTokenEmbedder",)),
    (
        "elmo_plugin.training",
        ("ReduceOnPlateauScheduler", "RunProgress", "SafeCheckpointer", "ValidateBeforeTraining"),
    ),
)

_registered = False
_commands_registered = False


def register_commands() -> None:
    """Register the `elmo-*` commands with AllenNLP, nothing else (idempotent)."""
    global _commands_registered
    if _commands_registered:
        return
    _commands_registered = True
    from elmo_plugin import commands

    commands.register()


def register() -> None:
    """Install the global hooks and register every component and command with AllenNLP (what
    importing the package does; idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    from elmo_plugin import hooks

    hooks.install()
    from elmo_plugin import tasks  # noqa: F401

    register_commands()
    for module_name, names in _COMPONENTS:
        module = importlib.import_module(module_name)
        globals().update({name: getattr(module, name) for name in names})


def _console_script_starting() -> bool:
    """Whether this process is the `elmo-plugin` console script importing its `main`, which
    registers the plugin itself when the command needs it."""
    main = sys.modules.get("__main__")
    script = Path(str(getattr(main, "__file__", None) or "")).name
    return script in ("elmo-plugin", "elmo-plugin-script.py", "elmo-plugin-script.pyw")


def _help_only() -> bool:
    """Whether this process is the `allennlp` command asked for help (`-h` or `--help` before
    any `--`): AllenNLP's parser prints the help, or an argument's error, and exits before any
    component is needed, so the commands alone are registered (issue 82 item 4)."""
    from elmo_plugin.common.command_line import is_allennlp_command

    argv = sys.argv[1:]
    head = argv[: argv.index("--")] if "--" in argv else argv
    return ("-h" in head or "--help" in head) and is_allennlp_command()


if _help_only():
    register_commands()
elif not _console_script_starting():
    register()
