"""The torch-only ELMo core: the biLM, AllenNLP's `Elmo` / `ElmoEmbedder` API without AllenNLP,
bilm-tf's files in and out, and embeddings read back from Parquet. Importing the package (or a
light module under it, such as `elmo_bilm.utils.checks`) imports no torch: each public name
imports its module when first asked for (PEP 562)."""

from importlib import metadata as _metadata

try:  # the installed distribution's version (packaging/elmo-bilm/pyproject.toml)
    __version__ = _metadata.version("elmo-bilm")
except _metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
    __version__ = "unknown"

import importlib
from typing import Any, Dict, List

# each public name, by the module that defines it
_NAMES: Dict[str, str] = {
    "DEFAULT_BATCH_SIZE": "elmo_bilm.dropins.allennlp",
    "DEFAULT_OPTIONS_FILE": "elmo_bilm.dropins.allennlp",
    "DEFAULT_WEIGHT_FILE": "elmo_bilm.dropins.allennlp",
    "Elmo": "elmo_bilm.dropins.allennlp",
    "ElmoEmbedder": "elmo_bilm.dropins.allennlp",
    "batch_to_ids": "elmo_bilm.dropins.allennlp",
    "_ElmoBiLm": "elmo_bilm.dropins.allennlp",
    "_ElmoCharacterEncoder": "elmo_bilm.dropins.allennlp",
    "FormatError": "elmo_bilm.formats.bilm_tf",
    "export_bilm_tf": "elmo_bilm.formats.bilm_tf",
    "load_bilm_tf": "elmo_bilm.formats.bilm_tf",
    "read_options": "elmo_bilm.formats.bilm_tf",
    "read_embeddings": "elmo_bilm.formats.parquet",
    "BiLm": "elmo_bilm.model.bilm",
    "ELMoCharacterMapper": "elmo_bilm.model.characters",
}

# Import paths documented before the modules moved into folders (the mirrored APIs into
# `dropins/`): each a one-line module at the old path that puts its home in `sys.modules`
# under the old name, so that both names are one module (not a copy).
ALIASES: Dict[str, str] = {
    "elmo_bilm.elmo": "elmo_bilm.dropins.allennlp",
    "elmo_bilm.elmo_lstm": "elmo_bilm.dropins.elmo_lstm",
    "elmo_bilm.elmoformanylangs": "elmo_bilm.dropins.elmoformanylangs",
    "elmo_bilm.simple_elmo": "elmo_bilm.dropins.simple_elmo",
    "elmo_bilm.bio_embeddings": "elmo_bilm.dropins.bio_embeddings",
    "elmo_bilm.tfhub": "elmo_bilm.dropins.tfhub",
    "elmo_bilm.flair": "elmo_bilm.dropins.flair",
    "elmo_bilm.integrations.flair": "elmo_bilm.dropins.flair",
    "elmo_bilm.spacy": "elmo_bilm.integrations.spacy",
    "elmo_bilm.precision": "elmo_bilm.runtime.precision",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    """A public name (`Elmo`, `load_bilm_tf`, ...), from its module, imported on first use."""
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
        globals()[name] = value  # asked for once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    """The module's own names and the public names not imported yet."""
    return sorted(set(globals()) | set(_NAMES))
