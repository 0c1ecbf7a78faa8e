"""Defaults of the environment variables that the configs in `training_config/` read (hook 2 of
`elmo_plugin.hooks`): the one place that knows where the data and the biLM are by default.

AllenNLP passes the environment to jsonnet as `std.extVar`s, and jsonnet has no default for a
missing one; so on import the plugin sets each variable below that the user has *not* set. A
user's own value always wins. The biLM defaults to the one shipped in `elmo_bilm`. The data
defaults are paths under `ELMO_PLUGIN_DATA`, which defaults to `../shared/data` beside a source
checkout; when no data folder is found (an installed wheel, say) the data variables stay unset,
and a config that needs one fails with AllenNLP's "Undefined external variable: NAME", naming the
variable to set. `ELMO_PROJECTION_DIM` (for encoder input sizes) is read from whichever options
file `ELMO_OPTIONS_FILE` names.
"""

import logging
import os
import re
from pathlib import Path
from typing import Any, Dict, Optional, Set

from allennlp.common.checks import ConfigurationError

from elmo_bilm.bilm_tf import read_options
from elmo_bilm.files import FormatError
from elmo_bilm.shipped import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE
from elmo_plugin.data.word_vectors import vector_defaults, vectors_dir

logger = logging.getLogger(__name__)


def checkout_root() -> Optional[Path]:
    """The source checkout this package runs from (the folder with `pyproject.toml` beside the
    `elmo_plugin` package), or None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "elmo_plugin").is_dir() else None


def data_dir() -> Optional[Path]:
    """`$ELMO_PLUGIN_DATA`, else `shared/data` beside a source checkout (where this project's
    machines keep the bundled data) if it exists, else None."""
    if "ELMO_PLUGIN_DATA" in os.environ:
        return Path(os.environ["ELMO_PLUGIN_DATA"])
    root = checkout_root()
    bundled = root.parent / "shared" / "data" if root is not None else None
    return bundled if bundled is not None and bundled.is_dir() else None


def data_defaults(data: Path) -> Dict[str, str]:
    """The data variables and their defaults under the data folder `data`."""
    litbank = data / "litbank"
    fold = os.environ.get("LITBANK_FOLD", "0")
    return {
        "ELMO_PLUGIN_DATA": str(data),
        "CONLL2003_TRAIN": str(data / "conll2003" / "eng.train"),
        "CONLL2003_DEV": str(data / "conll2003" / "eng.testa"),
        "CONLL2003_TEST": str(data / "conll2003" / "eng.testb"),
        "SST_TRAIN": str(data / "sst" / "train.txt"),
        "SST_DEV": str(data / "sst" / "dev.txt"),
        "SST_TEST": str(data / "sst" / "test.txt"),
        # SNLI: no training split here; a real small-scale run on the bundled dev and test pairs:
        # train on dev, validate on the first half of test, test on the second half
        "SNLI_TRAIN": str(data / "snli_eval" / "dev"),
        "SNLI_DEV": str(data / "snli_eval" / "test[:4912]"),
        "SNLI_TEST": str(data / "snli_eval" / "test[4912:]"),
        # SQuAD 1.1: no training split here; the bundled dev set's 48 articles split in file order:
        # train 0-35 (Super_Bowl_50 ... University_of_Chicago, 8,123 questions), dev 36-41
        # (Yuan_dynasty ... Rhine, 1,302), test 42-47 (Scottish_Parliament ... Force, 1,145)
        "SQUAD_TRAIN": str(data / "squad" / "dev-v1.1.json[:36]"),
        "SQUAD_DEV": str(data / "squad" / "dev-v1.1.json[36:42]"),
        "SQUAD_TEST": str(data / "squad" / "dev-v1.1.json[42:]"),
        # OntoNotes 5.0 is not here: SRL on PropBank's English Web Treebank (UD's split), ...
        "SRL_TRAIN": str(data / "propbank_ewt" / "train.gold_conll"),
        "SRL_DEV": str(data / "propbank_ewt" / "dev.gold_conll"),
        "SRL_TEST": str(data / "propbank_ewt" / "test.gold_conll"),
        # ... and coreference on LitBank, fold LITBANK_FOLD (0-9, default 0) of its 10-fold split
        **{
            f"COREF_{split.upper()}": f"{litbank}#{litbank / 'splits' / fold / f'{split}.ids'}"
            for split in ("train", "dev", "test")
        },
        # biLM pretraining: comma-separated FORMAT::PATH lists (see LmCorpusReader).
        "BILM_TRAIN": ",".join(
            [
                f"wikitext::{data / 'wikitext' / 'wiki.valid.tokens'}",
                f"conll2003::{data / 'conll2003' / 'eng.train'}",
                f"ptb_trees::{data / 'sst' / 'train.txt'}",
            ]
        ),
        "BILM_DEV": f"wikitext::{data / 'wikitext' / 'wiki.test.tokens'}",
        # the bundled Wikipedia, AB_wiki_98/99 held out (training_config/bilm_wikipedia.jsonnet)
        "BILM_WIKI_TRAIN": ",".join(
            f"wikiextractor::{data / 'wikipedia' / pattern}"
            for pattern in ("AA_wiki_*.gz", "AB_wiki_[0-8]?.gz", "AB_wiki_9[0-7].gz")
        ),
        "BILM_WIKI_DEV": f"wikiextractor::{data / 'wikipedia' / 'AB_wiki_9[89].gz'}",
        "FINETUNE_TRAIN": f"conll2003::{data / 'conll2003' / 'eng.train'}",
        "FINETUNE_DEV": f"conll2003::{data / 'conll2003' / 'eng.testa'}",
    }


def config_defaults() -> Dict[str, str]:
    """Every variable with a default, given the current environment."""
    defaults = {
        # the biLM shipped with the plugin (see README)
        "ELMO_OPTIONS_FILE": str(DEFAULT_OPTIONS_FILE),
        "ELMO_WEIGHT_FILE": str(DEFAULT_WEIGHT_FILE),
        # optional inputs, empty = not used
        "BILM_VOCAB": "",  # a bilm-tf vocab.txt; empty = built from BILM_TRAIN
        "BILM_PRETRAINED_ARCHIVE": "",  # a model.tar.gz to fine-tune from
        "SEED": "13370",  # the task configs' `seed` (AllenNLP's random, numpy and torch seeds)
    }
    # the baselines' context-free word vectors (built by `allennlp elmo-table1`)
    defaults.update(vector_defaults())
    data = data_dir()
    if data is not None:
        defaults.update(data_defaults(data))
    return defaults


# the variables this process set itself, with the value it set: recomputed at every call unless
# someone (the user, a script, a test) has changed the value since
_defaulted: Dict[str, str] = {}


def plugin_defaulted(name: str) -> bool:
    """Whether the variable `name` holds the value the plugin, not the user, set in this process."""
    return name in _defaulted and os.environ.get(name) == _defaulted[name]


# baseline word-vector variables that got "" because their file is not built yet, and those a
# warning has named already
_unbuilt: Set[str] = set()
_warned: Set[str] = set()


def set_config_defaults() -> None:
    """Every variable of `config_defaults()` the user has not set gets its default; a baseline
    word-vector file that is not built yet gives empty (embeddings trained from scratch) until it
    is, and the first config that reads it says so (`warn_unbuilt`). `ELMO_PROJECTION_DIM` comes
    from the options file `ELMO_OPTIONS_FILE` names."""
    vector_variables = vector_defaults()
    for name, value in config_defaults().items():
        if name in os.environ and not plugin_defaulted(name):
            _unbuilt.discard(name)
            continue  # the user's own value
        if name in vector_variables and not Path(value).is_file():
            _unbuilt.add(name)
            value = ""
        else:
            _unbuilt.discard(name)
        os.environ[name] = value
        _defaulted[name] = value
    # always from the options file in force (a value inherited from a parent process that used
    # another biLM would give the configs a stale width); a file that cannot give it is reported
    # by the first config that needs it (`check_options_file`), not here at import
    global _options_error
    try:
        options = read_options(os.environ["ELMO_OPTIONS_FILE"])
    except FormatError as error:
        os.environ.pop("ELMO_PROJECTION_DIM", None)
        _options_error = f"ELMO_OPTIONS_FILE: {error}"
    else:
        os.environ["ELMO_PROJECTION_DIM"] = str(options["lstm"]["projection_dim"])
        _options_error = None


# why ELMO_OPTIONS_FILE gave no ELMO_PROJECTION_DIM, if it did not
_options_error: Optional[str] = None


def check_options_file(config_file: str) -> None:
    """One line naming ELMO_OPTIONS_FILE when `config_file` needs the biLM's width and the file
    it names cannot give it (missing, truncated, not options), instead of jsonnet's "undefined
    external variable: ELMO_PROJECTION_DIM"."""
    if _options_error is not None and "ELMO_PROJECTION_DIM" in config_variables(config_file):
        raise ConfigurationError(_options_error)


_IMPORT = re.compile(r'import(?:str)?\s+"([^"]+)"')
_EXTVAR = re.compile(r'std\.extVar\(\s*"(\w+)"\s*\)')


def config_variables(config_file: str) -> Set[str]:
    """The `std.extVar` names a jsonnet config reads, in its own text and its imports'."""
    names: Set[str] = set()
    seen: Set[Path] = set()
    todo = [Path(config_file)]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        names.update(_EXTVAR.findall(text))
        todo.extend(path.parent / imported for imported in _IMPORT.findall(text))
    return names


def warn_unbuilt(config_file: str) -> None:
    """One warning for the baseline word-vector files `config_file` reads that are not built yet
    (its word embeddings then train from scratch), naming the command that builds them."""
    names = sorted((config_variables(config_file) & _unbuilt) - _warned)
    if names:
        _warned.update(names)
        logger.warning(
            "baseline word vectors not built yet (%s): %s trains those word embeddings from "
            "scratch; `allennlp elmo-table1` or `allennlp elmo-word-vectors` builds them under %s",
            ", ".join(names),
            config_file,
            vectors_dir(),
        )


def install() -> None:
    """Set the defaults now and again each time AllenNLP reads a config (`Params.from_file`), so
    that `ELMO_PROJECTION_DIM` follows `ELMO_OPTIONS_FILE` when a script changes it after
    importing the plugin, and warn there about unbuilt word vectors the config reads; a second
    call changes nothing."""
    from allennlp.common import Params

    set_config_defaults()
    read = Params.from_file.__func__  # type: ignore[attr-defined]
    if getattr(read, "_elmo_plugin", False):
        return

    def from_file(cls: Any, *args: Any, **kwargs: Any) -> Any:
        set_config_defaults()
        config_file = args[0] if args else kwargs.get("params_file")
        if config_file is not None:
            check_options_file(str(config_file))
            warn_unbuilt(str(config_file))
        return read(cls, *args, **kwargs)

    from_file._elmo_plugin = True  # type: ignore[attr-defined]
    Params.from_file = classmethod(from_file)  # type: ignore[method-assign,assignment]
