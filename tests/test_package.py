"""Packaging: a light import, and discovery through `.allennlp_plugins`."""
import os
import subprocess
import sys


def test_import_is_light_and_registers_components():
    code = (
        "import sys, elmo_plugin\n"
        "assert not [m for m in sys.modules if m.startswith('allennlp_models')], 'allennlp_models imported'\n"
        "assert 'allennlp.commands' not in sys.modules\n"
        "from allennlp.modules.token_embedders import TokenEmbedder\n"
        "from allennlp.models import Model\n"
        "from allennlp.data import DatasetReader\n"
        "assert TokenEmbedder.by_name('elmo_plugin_token_embedder')\n"
        "assert Model.by_name('elmo_plugin_bilm') and DatasetReader.by_name('elmo_plugin_lm_corpus')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_subcommands_found_through_the_plugins_file(repo_root):
    allennlp = os.path.join(os.path.dirname(sys.executable), "allennlp")
    assert (repo_root / ".allennlp_plugins").read_text().split() == ["elmo_plugin"]
    result = subprocess.run([allennlp, "elmo-export", "--help"], cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "bilm-tf" in result.stdout, result.stderr[-2000:]


def test_shipped_biLM_is_the_default(repo_root):
    from elmo_plugin.bilm.loading import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE, load_bilm
    from elmo_plugin.common.config_env import config_defaults

    assert DEFAULT_WEIGHT_FILE.is_file() and (DEFAULT_OPTIONS_FILE.parent / "vocab.txt").is_file()
    assert config_defaults()["ELMO_WEIGHT_FILE"] == str(DEFAULT_WEIGHT_FILE)
    bilm = load_bilm()
    assert bilm.num_layers == 3 and bilm.get_output_dim() == 128
