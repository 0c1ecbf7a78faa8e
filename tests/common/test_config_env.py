"""Configs by name, their variables resolved at each config load, nothing set at import."""

import json
import os
import subprocess
import sys

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from elmo_plugin.common import config_env
from tests.conftest import REPO_ROOT


def test_importing_the_plugin_sets_no_environment_variable():
    code = (
        "import json, os\n"
        "before = dict(os.environ)\n"
        "import elmo_plugin\n"
        "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ELMO", "SNLI", "SST"))}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=clean
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_a_packaged_config_is_read_by_name_as_by_path():
    by_name = Params.from_file("snli_esim_elmo").as_dict()
    by_path = Params.from_file(str(REPO_ROOT / "training_config" / "snli_esim_elmo.jsonnet"))
    assert by_name == by_path.as_dict()
    assert config_env.CONFIG_DIR.resolve() == (REPO_ROOT / "training_config").resolve()
    assert (
        "snli_esim_elmo" in config_env.config_names() and "common" not in config_env.config_names()
    )
    with pytest.raises(
        FileNotFoundError, match="snli_esim_elmoo: no such config file, and no packaged"
    ):
        Params.from_file("snli_esim_elmoo")


def test_an_unset_or_missing_dataset_is_one_line_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("ELMO_PLUGIN_DATA")
    with pytest.raises(ConfigurationError, match=r"^CONLL2003_DEV is not set: .* ELMO_PLUGIN_DATA"):
        Params.from_file("conll2003_crf_tagger")
    monkeypatch.setenv("ELMO_PLUGIN_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(
        ConfigurationError, match=r"CONLL2003_DEV=.*nowhere/conll2003/eng.testa: no such"
    ):
        Params.from_file("conll2003_crf_tagger")
    monkeypatch.setenv("CONLL2003_TRAIN", str(tmp_path / "mine.txt"))  # the user's own, existing
    (tmp_path / "mine.txt").write_text("")
    monkeypatch.setenv("ELMO_PLUGIN_DATA", str(REPO_ROOT.parent / "shared" / "data"))
    params = Params.from_file("conll2003_crf_tagger").as_dict()
    assert params["train_data_path"] == str(tmp_path / "mine.txt")
    assert params["validation_data_path"].endswith("conll2003/eng.testa")


def test_the_width_follows_the_options_file_in_force(monkeypatch):
    from elmo_bilm.shipped import DEFAULT_OPTIONS_FILE

    widths = []
    for options in (None, DEFAULT_OPTIONS_FILE):
        if options is not None:
            monkeypatch.setenv("ELMO_OPTIONS_FILE", str(options))
            monkeypatch.setenv("ELMO_WEIGHT_FILE", str(options.parent / "weights.hdf5"))
        params = Params.from_file("conll2003_crf_tagger_elmo").as_dict()
        widths.append(params["model"]["encoder"]["input_size"])
    assert widths[1] - widths[0] == 2 * (64 - 16)  # the shipped biLM's projection, the fixture's


def test_elmo_config_command_lists_and_finds_the_packaged_configs(capsys):
    from elmo_plugin.commands.elmo_config import ElmoConfig
    from tests.analysis.conftest import run_command

    run_command(ElmoConfig, ["elmo-config"])
    listed = capsys.readouterr().out.split()
    assert listed == config_env.config_names() and "sst_bcn_elmo" in listed
    run_command(ElmoConfig, ["elmo-config", "sst_bcn_elmo"])
    path = capsys.readouterr().out.strip()
    assert os.path.samefile(path, REPO_ROOT / "training_config" / "sst_bcn_elmo.jsonnet")
    with pytest.raises(SystemExit, match="elmo-config: error: nope: no such config file"):
        run_command(ElmoConfig, ["elmo-config", "nope"])
