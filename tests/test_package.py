"""Packaging: registration whatever the import order, discovery through `.allennlp_plugins`, the
torch-only core."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # trains models or starts subprocesses

REGISTERED = (
    "from allennlp.models import Model\n"
    "from allennlp.data import DatasetReader\n"
    "from allennlp.modules.token_embedders import TokenEmbedder\n"
    "from allennlp.predictors import Predictor\n"
    "assert TokenEmbedder.by_name('elmo_plugin_token_embedder')\n"
    "assert Model.by_name('elmo_plugin_bilm') and DatasetReader.by_name('elmo_plugin_lm_corpus')\n"
    "assert Model.by_name('elmo_plugin_bcn') and DatasetReader.by_name('elmo_plugin_snli')\n"
    "assert Model.by_name('elmo_plugin_coref') and Predictor.by_name('elmo_plugin_srl')\n"
    "assert Model.by_name('crf_tagger') and Model.by_name('esim')\n"
)


def _python(code: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_import_registers_every_component_before_allennlp():
    result = _python("import elmo_plugin\n" + REGISTERED)
    assert result.returncode == 0, result.stderr[-2000:]


def test_import_registers_every_component_after_allennlp():
    result = _python("import allennlp.models, allennlp.data\nimport elmo_plugin\n" + REGISTERED)
    assert result.returncode == 0, result.stderr[-2000:]


def test_plugins_file_registers_every_component(repo_root):
    code = "from allennlp.common.plugins import import_plugins\nimport_plugins()\n" + REGISTERED
    result = _python(code, cwd=repo_root)
    assert result.returncode == 0, result.stderr[-2000:]


def test_biLM_core_imports_no_allennlp():
    code = (
        "import sys, elmo_bilm, elmo_bilm.model.vocab, elmo_bilm.utils.files, elmo_bilm.sources.shipped\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('allennlp', 'elmo_plugin')], sorted(sys.modules)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr[-2000:]


def test_subcommands_found_through_the_plugins_file(repo_root):
    allennlp = os.path.join(os.path.dirname(sys.executable), "allennlp")
    assert (repo_root / ".allennlp_plugins").read_text().split() == ["elmo_plugin"]
    result = subprocess.run(
        [allennlp, "elmo-export", "--help"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0 and "bilm-tf" in result.stdout, result.stderr[-2000:]


def test_shipped_biLM_is_the_default(monkeypatch):
    from elmo_bilm.sources.shipped import SHIPPED_VOCAB_FILE, SHIPPED_WEIGHT_FILE
    from elmo_plugin.common.config_env import config_defaults
    from elmo_plugin.modules.bilm_loading import load_bilm_or_archive

    assert SHIPPED_WEIGHT_FILE.is_file() and SHIPPED_VOCAB_FILE.is_file()
    monkeypatch.delenv("ELMO_OPTIONS_FILE")  # the tests' fixture biLM otherwise (conftest)
    assert config_defaults()["ELMO_WEIGHT_FILE"] == str(SHIPPED_WEIGHT_FILE)
    bilm = load_bilm_or_archive()
    assert bilm.num_layers == 3 and bilm.get_output_dim() == 128


def test_allennlp_start_makes_no_network_lookup():
    """Importing every plugin as `allennlp` does (allennlp_models included) asks no name server:
    allennlp_models' NarrativeQA metric would download nltk data (see the Makefile)."""
    code = (
        "import socket\n"
        "lookups = []\n"
        "def refuse(host, *args, **kwargs):\n"
        "    lookups.append(host)\n"
        "    raise OSError('no network')\n"
        "socket.getaddrinfo = refuse\n"
        "from allennlp.common.plugins import import_plugins\n"
        "import_plugins()\n"
        "print(lookups)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == "[]"
    assert "[nltk_data]" not in result.stderr


def test_no_import_circle_and_no_import_from_a_higher_layer(repo_root):
    """Layers, low to high: `elmo_bilm` (no AllenNLP); the plugin's components (`common`, `data`,
    `modules`, `token_embedders`, `lm`, `training`, `hooks`); `tasks`; `analysis`; `commands`.
    Every import of the two packages (lazy ones inside functions too) goes down or sideways, and
    no module imports itself back (a package's `__init__` importing its own children aside)."""
    import ast
    import graphlib

    modules = {}
    for package in ("elmo_bilm", "elmo_plugin"):
        for path in (repo_root / package).rglob("*.py"):
            if "configs" not in path.parts:
                name = ".".join(path.relative_to(repo_root).with_suffix("").parts)
                modules[name.removesuffix(".__init__")] = path

    def imported(path):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
        return found & set(modules)

    def layer(name):
        parts = name.split(".")
        if parts[0] == "elmo_bilm":
            return 0
        return {"tasks": 2, "analysis": 3, "commands": 4}.get(parts[1] if len(parts) > 1 else "", 1)

    graph = {
        name: {d for d in imported(path) if d != name and not d.startswith(name + ".")}
        for name, path in modules.items()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a circle
    upward = [(m, d) for m, ds in graph.items() for d in ds if "." in m and layer(d) > layer(m)]
    assert upward == []
