"""The packaged configs by name: the one place that finds a config given as a path or a name.

Imports nothing of AllenNLP or torch, so that `elmo-plugin elmo-config [NAME]` answers without
them (`elmo_plugin.common.command_line`) and `elmo_plugin.common.config_env` shares it."""

import difflib
import os
from pathlib import Path
from typing import List

from elmo_plugin.common.parsers import CONFIG_DIR


def config_names() -> List[str]:
    """The packaged configs, by name."""
    return sorted(path.stem for path in CONFIG_DIR.glob("*.jsonnet"))


def did_you_mean(name: str, list_all: bool = True) -> str:
    """The packaged configs closest to `name` ("did you mean ...": difflib's closest, then those
    containing it), else all of them (`list_all`) or where to find them."""
    names = config_names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.7)
    close += [other for other in names if len(name) >= 3 and name in other and other not in close]
    close = close[:4]
    if close:
        return f"did you mean {' or '.join(close)}? (`elmo-plugin elmo-config` lists them all)"
    if not list_all:
        return "`elmo-plugin elmo-config` lists the packaged configs"
    return f"the packaged configs: {', '.join(names)}"


def find_config(name: str) -> str:
    """A config given as a path (returned as it is) or as a packaged config's name (also where a
    folder of that name is in the current one: a folder is no config); a name or a local path
    that is neither is a `FileNotFoundError` naming the closest packaged configs."""
    if os.path.isdir(name):
        if name in config_names():
            return str(CONFIG_DIR / f"{name}.jsonnet")
        raise FileNotFoundError(
            f"{name}: a folder, not a config file, and no packaged config of that name; "
            f"{did_you_mean(Path(name).name, list_all=False)}"
        )
    if os.path.exists(name) or "://" in name:
        return name
    if "/" in name or name.endswith((".jsonnet", ".json")):
        stem = Path(name).name.rsplit(".", 1)[0] if "." in Path(name).name else Path(name).name
        raise FileNotFoundError(
            f"{name}: no such config file; {did_you_mean(stem, list_all=False)}"
        )
    if name not in config_names():
        raise FileNotFoundError(
            f"{name}: no such config file, and no packaged config of that name; "
            f"{did_you_mean(name)}"
        )
    return str(CONFIG_DIR / f"{name}.jsonnet")
