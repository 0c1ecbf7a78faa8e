"""The torch-only ELMo core: the biLM, AllenNLP's `Elmo` / `ElmoEmbedder` API without AllenNLP,
bilm-tf's files in and out, and embeddings read back from Parquet."""

from importlib import metadata as _metadata

try:  # the installed distribution's version (packaging/elmo-bilm/pyproject.toml)
    __version__ = _metadata.version("elmo-bilm")
except _metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
    __version__ = "unknown"

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import CodeType, ModuleType
from typing import Dict, Optional, Sequence

from elmo_bilm.dropins.allennlp import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OPTIONS_FILE,
    DEFAULT_WEIGHT_FILE,
    Elmo,
    ElmoEmbedder,
    batch_to_ids,
)
from elmo_bilm.formats.bilm_tf import FormatError, export_bilm_tf, load_bilm_tf, read_options
from elmo_bilm.formats.parquet import read_embeddings
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import ELMoCharacterMapper

# Import paths documented before the modules moved into folders (the mirrored APIs into
# `dropins/`), each the same module object as its home, imported only when asked for.
ALIASES: Dict[str, str] = {
    "elmo_bilm.elmo": "elmo_bilm.dropins.allennlp",
    "elmo_bilm.elmoformanylangs": "elmo_bilm.dropins.elmoformanylangs",
    "elmo_bilm.simple_elmo": "elmo_bilm.dropins.simple_elmo",
    "elmo_bilm.bio_embeddings": "elmo_bilm.dropins.bio_embeddings",
    "elmo_bilm.tfhub": "elmo_bilm.dropins.tfhub",
    "elmo_bilm.flair": "elmo_bilm.dropins.flair",
    "elmo_bilm.integrations.flair": "elmo_bilm.dropins.flair",
    "elmo_bilm.spacy": "elmo_bilm.integrations.spacy",
    "elmo_bilm.precision": "elmo_bilm.runtime.precision",
}


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `ALIASES`' old paths after every other finder has not: the module at the new path,
    its own `__spec__` kept (so that it is one module under two names, not a copy). The spec
    found names the home's file as its origin, and `python -m OLD` (runpy, which asks the
    loader for the code) runs the home's code, as `python -m NEW` does."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in ALIASES:
            return None
        home = importlib.util.find_spec(ALIASES[fullname])
        origin = home.origin if home is not None else None
        return importlib.util.spec_from_loader(fullname, self, origin=origin)

    def _home_loader(self, fullname: str) -> importlib.abc.InspectLoader:
        home = importlib.util.find_spec(ALIASES[fullname])
        if home is None or not isinstance(home.loader, importlib.abc.InspectLoader):
            raise ImportError(f"{fullname}: its home {ALIASES[fullname]} has no code to read")
        return home.loader

    def get_code(self, fullname: str) -> Optional[CodeType]:
        return self._home_loader(fullname).get_code(ALIASES[fullname])

    def get_source(self, fullname: str) -> Optional[str]:
        return self._home_loader(fullname).get_source(ALIASES[fullname])

    def is_package(self, fullname: str) -> bool:
        return False

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(ALIASES[spec.name])
        spec.loader_state = module.__spec__  # its own, which importlib replaces next
        return module

    def exec_module(self, module: ModuleType) -> None:
        own = module.__spec__.loader_state if module.__spec__ is not None else None
        if own is not None:
            module.__spec__ = own


# one finder, also after `importlib.reload(elmo_bilm)` (whose class is a new one: the finder of
# the run before is replaced, not kept beside it)
sys.meta_path[:] = [
    finder
    for finder in sys.meta_path
    if not (type(finder).__name__ == "_AliasFinder" and type(finder).__module__ == __name__)
]
sys.meta_path.append(_AliasFinder())
