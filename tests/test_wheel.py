"""`pip wheel .` builds a wheel with the shipped biLM; installed from it (not editable), the default
TokenEmbedder and `allennlp elmo-embed` work outside the checkout."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from elmo_plugin.common.config_env import data_defaults

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, repo_root):
    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"  # a copy: an in-tree build would leave build/ in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo_root / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("elmo_bilm", "elmo_plugin"):
        shutil.copytree(repo_root / name, source / name, ignore=ignore)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command = [*pip, str(source), "-w", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=out)
    assert result.returncode == 0, result.stderr[-3000:]
    (path,) = out.glob("elmo_plugin-*.whl")
    return path


def test_wheel_holds_the_packages_and_the_shipped_biLM(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("options.json", "weights.hdf5", "vocab.txt"):
        assert f"elmo_bilm/pretrained/wikipedia/{name}" in names
    assert "elmo_bilm/bilm.py" in names and "elmo_plugin/tasks/sst/models/bcn.py" in names
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)


def test_installed_wheel_embeds_with_the_shipped_biLM(wheel, tmp_path, repo_root):
    target = tmp_path / "site"
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--target",
        str(target),
        str(wheel),
    ]
    assert subprocess.run(install, capture_output=True, timeout=300).returncode == 0
    environment = {**os.environ, "PYTHONPATH": str(target)}
    for name in data_defaults(Path("unused")):  # as on a machine without the bundled data
        environment.pop(name, None)
    code = (
        "import elmo_plugin, torch\n"
        f"assert elmo_plugin.__file__.startswith({str(target)!r}), elmo_plugin.__file__\n"
        "from allennlp.common import Params\n"
        "from allennlp.modules.elmo import batch_to_ids\n"
        "from allennlp.modules.token_embedders import TokenEmbedder\n"
        "embedder = TokenEmbedder.from_params(Params({'type': 'elmo_plugin_token_embedder'})).eval()\n"
        "print(tuple(embedder(batch_to_ids([['a', 'shipped', 'biLM']])).shape))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-3:] == ["(1,", "3,", "128)"]
    (tmp_path / "in.txt").write_text("a shipped biLM\n")
    (tmp_path / ".allennlp_plugins").write_text("elmo_plugin\n")
    allennlp = [sys.executable, "-m", "allennlp", "elmo-embed", "in.txt", "out.hdf5"]
    result = subprocess.run(
        allennlp, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=environment
    )
    assert result.returncode == 0, result.stderr[-3000:]
    import h5py

    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert out["0"].shape == (3, 3, 128) and json.loads(out["sentence_to_index"][()]) == {
            "a shipped biLM": "0"
        }
