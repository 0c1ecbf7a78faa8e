"""The `allennlp elmo-*` subcommands. Importing this package imports nothing heavy, so that
`elmo-plugin` can read the commands' parsers (`elmo_plugin.common.parsers`) before AllenNLP is
imported; importing `elmo_plugin` imports `MODULES`, which registers the commands with AllenNLP.
The command classes are still importable from here (`from elmo_plugin.commands import
ElmoConfig`), each importing its module when asked for."""

import importlib
from typing import Any

# the modules whose import registers the subcommands
MODULES = (
    "analysis",
    "elmo_config",
    "elmo_embed",
    "elmo_export",
    "elmo_prepare_corpus",
    "elmo_table1",
    "elmo_vocab",
    "elmo_word_vectors",
)

# each command class, by the module that defines it
_CLASSES = {
    "ElmoConfig": "elmo_config",
    "ElmoEmbed": "elmo_embed",
    "ElmoExport": "elmo_export",
    "ElmoLayerWeights": "analysis",
    "ElmoNeighbours": "analysis",
    "ElmoPrepareCorpus": "elmo_prepare_corpus",
    "ElmoProbe": "analysis",
    "ElmoSweep": "analysis",
    "ElmoTable1": "elmo_table1",
    "ElmoVocab": "elmo_vocab",
    "ElmoWordVectors": "elmo_word_vectors",
}


def register() -> None:
    """Import every command module, which registers its commands with AllenNLP."""
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")


def __getattr__(name: str) -> Any:
    """A command class (`ElmoConfig`, ...), from its module."""
    if name in _CLASSES:
        return getattr(importlib.import_module(f"{__name__}.{_CLASSES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
