"""The console scripts' shared arguments: `--version` on each, from the installed metadata."""

import importlib.metadata
import os
import subprocess
import sys

import pytest
import tomllib

import elmo_bilm
from tests.conftest import REPO_ROOT

SCRIPTS = tomllib.loads((REPO_ROOT / "packaging/elmo-bilm/pyproject.toml").read_text())["project"][
    "scripts"
]


def test_the_package_version_is_the_installed_distributions():
    assert elmo_bilm.__version__ == importlib.metadata.version("elmo-bilm") != "unknown"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_console_script_prints_its_version(script):
    """`SCRIPT --version`: one line, the script's name and elmo-bilm's version, exit status 0."""
    path = os.path.join(os.path.dirname(sys.executable), script)
    result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"{script} {importlib.metadata.version('elmo-bilm')}\n"
