"""The variables the training configs read (`std.extVar`), resolved when a config is loaded.

The configs ship inside the package (`elmo_plugin/configs`, the checkout's `training_config/`);
`allennlp train NAME ...` takes a config's name (`snli_esim_elmo`) as well as a path. AllenNLP
passes the environment to jsonnet, and jsonnet has no default for a missing variable, so each
time AllenNLP reads one of the plugin's configs (`Params.from_file`, hook 2 of
`elmo_plugin.hooks`; `is_plugin_config` tells which) the defaults below are passed along for the
variables the user has not set, and nothing is written into the environment. A user's own value
always wins; any other config is read as AllenNLP alone reads it.

- The biLM (`weight_file_default`): `ELMO_OPTIONS_FILE` unset, both files default to the biLM
  shipped in `elmo_bilm`; a biLM that stands alone in it (a name, `wikipedia_1024`, `original`,
  ...; `hf://ORG/REPO`; a `.zip` / `.tar.gz`) needs no `ELMO_WEIGHT_FILE` (default empty); an
  options file's path or URL needs `ELMO_WEIGHT_FILE` set, else a `ConfigError` (never the shipped
  weights under another biLM's options). `ELMO_PROJECTION_DIM` (encoder input sizes) is read from
  the options in force.
- The data: `SNLI_TRAIN`, `CONLL2003_DEV`, ... default to paths under `$ELMO_PLUGIN_DATA`, a
  folder laid out as this project's bundled data, when it is set; the package knows no data
  folder of its own. A data variable that is unset, or names a missing path, is one error naming
  the variable, its value and the folder a relative path was resolved against; every path in a
  data variable (and `ELMO_PLUGIN_DATA` itself) is made absolute when read, so a saved config
  names the files a run read wherever it is used later.
- The baselines' word vectors: `*_WORD_VECTORS` default to the files under
  `$ELMO_PLUGIN_VECTORS`, built or not; a config reads one only with its argument
  `pretrained_word_vectors=true` (what `allennlp elmo-table1` passes; false, the default, trains
  the embeddings from scratch), and a file asked for that is not there is one `ConfigError`
  naming the commands that build it (`check_word_vectors`). No file's existence chooses.
"""

import glob
import logging
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from allennlp.common.checks import ConfigurationError

from elmo_bilm.formats.bilm_tf import read_options
from elmo_bilm.sources import published
from elmo_bilm.sources.resolver import names_whole_bilm, options_path
from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE
from elmo_bilm.utils.files import FormatError
from elmo_plugin.common.config_names import CONFIG_DIR, find_config
from elmo_plugin.common.slices import slice_parts
from elmo_plugin.data.word_vectors import vector_defaults, vectors_dir

logger = logging.getLogger(__name__)


class ConfigError(ConfigurationError):
    """A user's error in loading a config (an unset or missing dataset, an unreadable options
    file): under the `allennlp` command, one line `allennlp: error: ...`, not a traceback
    (`elmo_plugin.common.command_line`); AllenNLP's own `ConfigurationError`s stay as they are."""


class ConfigNotFoundError(ConfigError, FileNotFoundError):
    """A config named by a path or a packaged name that is neither."""


def config_path(name: str) -> str:
    """A config given as a path or a packaged config's name (`config_names.find_config`); one
    that is neither is a `ConfigNotFoundError` naming the closest packaged configs."""
    try:
        return find_config(name)
    except FileNotFoundError as error:
        raise ConfigNotFoundError(str(error)) from None


def absolute(path: str) -> str:
    """`path` with `~` expanded, made absolute against the current folder and normalised."""
    return os.path.abspath(os.path.expanduser(path))


def data_dir_value() -> str:
    """`$ELMO_PLUGIN_DATA` as the user set it (empty: unset); the one place it is read."""
    return os.environ.get("ELMO_PLUGIN_DATA", "")


def data_dir() -> Optional[Path]:
    """`$ELMO_PLUGIN_DATA`, a folder laid out as the bundled data, as an absolute path, or None."""
    value = data_dir_value()
    return Path(absolute(value)) if value else None


def data_defaults(data: Path) -> Dict[str, str]:
    """The data variables and their defaults under the data folder `data`."""
    litbank = data / "litbank"
    fold = os.environ.get("LITBANK_FOLD", "0")
    return {
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
        # the bundled Wikipedia, AB_wiki_98/99 held out (bilm_wikipedia.jsonnet)
        "BILM_WIKI_TRAIN": ",".join(
            f"wikiextractor::{data / 'wikipedia' / pattern}"
            for pattern in ("AA_wiki_*.gz", "AB_wiki_[0-8]?.gz", "AB_wiki_9[0-7].gz")
        ),
        "BILM_WIKI_DEV": f"wikiextractor::{data / 'wikipedia' / 'AB_wiki_9[89].gz'}",
        "FINETUNE_TRAIN": f"conll2003::{data / 'conll2003' / 'eng.train'}",
        "FINETUNE_DEV": f"conll2003::{data / 'conll2003' / 'eng.testa'}",
    }


# the data variables (their names do not depend on the folder)
DATA_VARIABLES = frozenset(data_defaults(Path("data")))
# optional inputs: empty = not used
OPTIONAL = {
    "BILM_VOCAB": "",  # a bilm-tf vocab.txt; empty = built from BILM_TRAIN
    "BILM_PRETRAINED_ARCHIVE": "",  # a model.tar.gz to fine-tune from
}


def stands_alone(options_file: str) -> bool:
    """Whether `options_file` names a whole biLM, weights included: a biLM's name, a Hugging Face
    Hub id or a biLM archive (`elmo_bilm.sources.resolver.names_whole_bilm`)."""
    return names_whole_bilm(options_file)


def weight_file_default(options_file: Optional[str]) -> Optional[str]:
    """`ELMO_WEIGHT_FILE`'s default for the `ELMO_OPTIONS_FILE` in force: the shipped weights for
    the shipped options (unset or its path); empty for a biLM that `stands_alone`; none (the user
    sets it) for any other options file."""
    if options_file is None or options_file == str(SHIPPED_OPTIONS_FILE):
        return str(SHIPPED_WEIGHT_FILE)
    return "" if stands_alone(options_file) else None


def config_defaults() -> Dict[str, str]:
    """Every variable with a default, given the current environment (`ELMO_WEIGHT_FILE` as
    `weight_file_default`; the baseline word vectors' files, built or not)."""
    defaults = {
        "ELMO_OPTIONS_FILE": str(SHIPPED_OPTIONS_FILE),  # the biLM shipped with the plugin
        "SEED": "13370",  # the task configs' `seed` (AllenNLP's random, numpy and torch seeds)
        **OPTIONAL,
    }
    weight_file = weight_file_default(os.environ.get("ELMO_OPTIONS_FILE"))
    if weight_file is not None:
        defaults["ELMO_WEIGHT_FILE"] = weight_file
    defaults.update(vector_defaults())
    data = data_dir()
    if data is not None:
        defaults.update(data_defaults(data))
    return defaults


_IMPORT = re.compile(r"""import(?:str|bin)?\s+(?:"([^"]+)"|'([^']+)')""")
_EXTVAR = re.compile(r"""std\.extVar\(\s*["'](\w+)["']\s*\)""")


def _config_files(config_file: str) -> Set[Path]:
    """`config_file` and every file it imports, directly or not (jsonnet resolves an import
    against the importing file's folder; AllenNLP passes no search path), resolved."""
    seen: Set[Path] = set()
    todo = [Path(config_file)]
    while todo:
        path = todo.pop().resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        todo.extend(path.parent / (double or single) for double, single in _IMPORT.findall(text))
    return seen


def config_variables(config_file: str) -> Set[str]:
    """The `std.extVar` names a jsonnet config reads, in its own text and its imports'."""
    names: Set[str] = set()
    for path in _config_files(config_file):
        names.update(_EXTVAR.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


def is_plugin_config(config_file: str) -> bool:
    """Whether `config_file` is one of the plugin's configs: it, or a file it imports (directly or
    not), lies in the package's config folder (`elmo_plugin/configs`, the checkout's
    `training_config/`), symbolic links resolved. Only these get the plugin's defaults."""
    folder = CONFIG_DIR.resolve()
    return any(path.parent == folder for path in _config_files(config_file))


def absolute_paths(value: str) -> str:
    """A data variable's value with each file path in it made absolute (`absolute`), its syntax
    kept: `FORMAT::PATH` lists, `PATH[START:END]` slices, `PATH#IDS` document lists; URLs and
    empty parts stay as they are."""
    items = []
    for item in value.split(","):
        prefix, _, rest = item.rpartition("::")
        parts = []
        for part in rest.split("#"):
            path, slice_ = slice_parts(part)
            if path.strip() and "://" not in path:
                path = absolute(path)
            parts.append(path + slice_)
        items.append((prefix + "::" if prefix else "") + "#".join(parts))
    return ",".join(items)


def _paths(value: str) -> List[str]:
    """The file paths in a data variable's value: `FORMAT::PATH` lists, `PATH[START:END]`
    slices, `PATH#IDS` document lists (both files)."""
    paths = []
    for item in value.split(","):
        item = item.split("::", 1)[-1]
        for part in item.split("#"):
            paths.append(slice_parts(part)[0])
    return [path for path in paths if path]


def _missing_path(value: str) -> Optional[str]:
    """The first path of `value` that is not there: neither it (or its glob's matches) nor its
    folder (some readers take `FOLDER/SPLIT` names, e.g. SNLI's `s1.SPLIT` files; the reader
    names a missing file of an existing folder itself)."""
    for path in _paths(value):
        if any(c in path for c in "*?["):
            if not glob.glob(path):
                return path
        elif not os.path.exists(path) and not os.path.isdir(os.path.dirname(path) or "."):
            return path
    return None


def _missing_message(name: str, value: str, missing: str) -> str:
    """One line for a data variable naming a path that is not there: the variable, its value,
    the missing path and the folder it was resolved against (the current one, or
    `$ELMO_PLUGIN_DATA` for a default)."""
    line = f"{name}={value}: no such file or folder: {missing}"
    if name not in os.environ:
        data = data_dir_value()
        line += (
            f" ({name} is unset: its default is under ELMO_PLUGIN_DATA={data}, resolved against "
            f"{os.getcwd()} to {absolute(data)}"
        )
        if not os.path.isdir(absolute(data)):
            line += ", which is not a folder"
        return line + ")"
    if any(not os.path.isabs(os.path.expanduser(path)) for path in _paths(value)):
        line += f" (relative paths are resolved against the current folder, {os.getcwd()})"
    return line


def config_ext_vars(config_file: str) -> Dict[str, str]:
    """The defaults to pass to jsonnet for `config_file`: every variable it reads that the
    environment lacks; `ELMO_PROJECTION_DIM` from the options file in force. Raises one
    `ConfigError` naming the variable for an unset or missing dataset, for an options
    file that cannot give the biLM's width and for an options file's path without
    `ELMO_WEIGHT_FILE`."""
    wanted = config_variables(config_file)
    defaults = config_defaults()
    ext_vars = {name: defaults[name] for name in wanted if name in defaults}
    ext_vars = {name: value for name, value in ext_vars.items() if name not in os.environ}
    value = {**defaults, **os.environ}.get
    for name in sorted(wanted & DATA_VARIABLES):
        raw = value(name)
        if raw is None:
            raise ConfigError(
                f"{name} is not set: {config_file} reads its data from it (set it, or "
                "ELMO_PLUGIN_DATA to a folder laid out as this project's bundled data)"
            )
        resolved = absolute_paths(raw)
        missing = _missing_path(resolved)
        if missing is not None:
            raise ConfigError(_missing_message(name, raw, missing))
        if resolved != raw:
            ext_vars[name] = resolved
    # the optional inputs and the word vectors, a relative path given: absolute too (other forms,
    # URLs and AllenNLP's `(ARCHIVE)#FILE`, stay as they are; AllenNLP names a missing file)
    for name in sorted(wanted & (set(OPTIONAL) | set(vector_defaults()))):
        raw = value(name) or ""
        if raw and not os.path.isabs(raw) and not any(mark in raw for mark in ("://", "#", "(")):
            ext_vars[name] = absolute(raw)
    if "ELMO_PROJECTION_DIM" in wanted:
        try:
            options = read_options(options_path(value("ELMO_OPTIONS_FILE") or ""))
        except (FormatError, OSError) as error:
            raise ConfigError(f"ELMO_OPTIONS_FILE: {error}") from None
        ext_vars["ELMO_PROJECTION_DIM"] = str(options["lstm"]["projection_dim"])
    if "ELMO_WEIGHT_FILE" in wanted and value("ELMO_WEIGHT_FILE") is None:
        raise ConfigError(
            f"ELMO_OPTIONS_FILE={os.environ['ELMO_OPTIONS_FILE']} is an options file: set "
            "ELMO_WEIGHT_FILE to its weights (a biLM's name alone needs none: "
            f"{', '.join(published.names())})"
        )
    return ext_vars


def _pretrained_files(params: Any) -> Iterator[str]:
    """Every `pretrained_file` in a config's (nested) dict."""
    if isinstance(params, dict):
        for key, value in params.items():
            if key == "pretrained_file" and isinstance(value, str):
                yield value
            else:
                yield from _pretrained_files(value)
    elif isinstance(params, list):
        for item in params:
            yield from _pretrained_files(item)


def check_word_vectors(config_file: str, params: Dict[str, Any], ext_vars: Dict[str, str]) -> None:
    """A local word-vector file the evaluated config asks for (an embedder's `pretrained_file`:
    `pretrained_word_vectors=true`) that is not there: one `ConfigError` naming its variable and
    the commands that build it (URLs and `(ARCHIVE)#FILE` forms are AllenNLP's to fetch)."""
    variables = {**config_defaults(), **os.environ, **ext_vars}
    for path in _pretrained_files(params):
        if "://" in path or "(" in path or os.path.exists(path):
            continue
        names = [name for name in vector_defaults() if variables.get(name) == path]
        named = f"{names[0]}={path}" if names else path
        raise ConfigError(
            f"{named}: no such word-vector file, which {config_file} reads "
            "(pretrained_word_vectors=true): `elmo-plugin elmo-word-vectors` builds one (the baseline "
            f"files, under {vectors_dir()}, also `elmo-plugin elmo-table1`); or train the word "
            "embeddings from scratch with pretrained_word_vectors=false"
        )


def variable_sources(config_file: str) -> List[Tuple[str, str, str]]:
    """Each variable a plugin config reads: its name, the value a load passes to jsonnet, and
    where that value comes from (the environment, a default under `ELMO_PLUGIN_DATA`, the plugin's
    default, or derived from the options file); a variable with no value is left out (jsonnet
    names it)."""
    ext_vars = config_ext_vars(config_file) if is_plugin_config(config_file) else {}
    rows = []
    for name in sorted(config_variables(config_file)):
        if name == "ELMO_PROJECTION_DIM" and name in ext_vars:
            source = "read from the ELMO_OPTIONS_FILE in force"
        elif name in os.environ:
            changed = name in ext_vars and ext_vars[name] != os.environ[name]
            source = "set in the environment" + (", made absolute" if changed else "")
        elif name not in ext_vars:
            continue
        elif name in DATA_VARIABLES:
            source = "default from ELMO_PLUGIN_DATA"
        else:
            source = "the plugin's default"
        value = ext_vars.get(name, os.environ.get(name, ""))
        rows.append((name, value, source if value else f"{source}: empty"))
    return rows


def jsonnet_variables() -> Dict[str, str]:
    """Every variable as a config load sees it (the defaults, the environment over them, the
    biLM's width), for evaluating jsonnet snippets outside `Params.from_file`."""
    variables = {**config_defaults(), **os.environ}
    options = read_options(options_path(variables["ELMO_OPTIONS_FILE"]))
    return {**variables, "ELMO_PROJECTION_DIM": str(options["lstm"]["projection_dim"])}


def install() -> None:
    """Wrap `Params.from_file` (AllenNLP offers no hook for default `ext_vars`): a packaged
    config's name stands for its path, and for the plugin's own configs (`is_plugin_config`)
    `config_ext_vars` gives the defaults; the caller's own `ext_vars` and the environment win;
    `check_word_vectors` names a word-vector file it asks for that is not there. Any other
    config is read as AllenNLP alone reads it. A second call changes nothing."""
    from allennlp.common import Params

    read = Params.from_file.__func__  # type: ignore[attr-defined]
    if getattr(read, "_elmo_plugin", False):
        return

    def from_file(
        cls: Any, params_file: Any, params_overrides: Any = "", ext_vars: Any = None
    ) -> Any:
        params_file = config_path(str(params_file))
        if not is_plugin_config(params_file):  # another's config: AllenNLP's read as it is
            return read(cls, params_file, params_overrides, ext_vars)
        defaults = config_ext_vars(params_file)
        params = read(cls, params_file, params_overrides, {**defaults, **(ext_vars or {})})
        check_word_vectors(params_file, params.as_dict(quiet=True), defaults)
        return params

    from_file._elmo_plugin = True  # type: ignore[attr-defined]
    Params.from_file = classmethod(from_file)  # type: ignore[method-assign,assignment]
