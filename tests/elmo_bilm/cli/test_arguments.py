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


@pytest.mark.parametrize(
    "module, argv",
    [
        ("embed_corpus", ["in.txt", "out", "--max-tokens", "0"]),
        ("embed", ["in.txt", "out.hdf5", "--batch-size", "0"]),
        ("convert", ["--no-such-flag"]),
        ("export_onnx", ["--max-tokens", "x"]),
    ],
)
def test_a_bad_argument_is_one_line_naming_the_help(capsys, module, argv):
    """Issue 88: `elmo-embed-corpus --max-tokens 0` printed argparse's usage first (14 lines)."""
    import importlib

    main = importlib.import_module(f"elmo_bilm.cli.{module}").main
    with pytest.raises(SystemExit) as exit:
        main(argv)
    (line,) = capsys.readouterr().err.strip().splitlines()
    prog = "elmo-" + module.replace("_", "-")
    assert exit.value.code == 2 and line.startswith(f"{prog}: error: ") and f"{prog} --help" in line
