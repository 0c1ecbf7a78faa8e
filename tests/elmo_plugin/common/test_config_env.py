"""Configs by name, their variables resolved at each config load, nothing set at import."""

import json
import os
import subprocess
import sys

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from elmo_plugin.common import config_env, config_names
from tests.conftest import DATA, OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE


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
        "snli_esim_elmo" in config_names.config_names()
        and "common" not in config_names.config_names()
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
    from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE

    widths = []
    for options in (None, SHIPPED_OPTIONS_FILE):
        if options is not None:
            monkeypatch.setenv("ELMO_OPTIONS_FILE", str(options))
            monkeypatch.setenv("ELMO_WEIGHT_FILE", str(options.parent / "weights.hdf5"))
        params = Params.from_file("conll2003_crf_tagger_elmo").as_dict()
        widths.append(params["model"]["encoder"]["input_size"])
    assert widths[1] - widths[0] == 2 * (64 - 16)  # the shipped biLM's projection, the fixture's


def test_elmo_config_command_lists_and_finds_the_packaged_configs(capsys):
    from elmo_plugin.commands.elmo_config import ElmoConfig
    from tests.elmo_plugin.analysis.conftest import run_command

    run_command(ElmoConfig, ["elmo-config"])
    listed = capsys.readouterr().out.split()
    assert listed == config_names.config_names() and "sst_bcn_elmo" in listed
    run_command(ElmoConfig, ["elmo-config", "sst_bcn_elmo"])
    path = capsys.readouterr().out.strip()
    assert os.path.samefile(path, REPO_ROOT / "training_config" / "sst_bcn_elmo.jsonnet")
    with pytest.raises(SystemExit, match="elmo-config: error: nope: no such config file"):
        run_command(ElmoConfig, ["elmo-config", "nope"])


def test_data_variables_and_elmo_plugin_data_are_made_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("ELMO_PLUGIN_DATA", os.path.relpath(DATA))  # e.g. ../shared/data
    params = Params.from_file("snli_esim_elmo").as_dict()
    assert params["train_data_path"] == str(DATA / "snli_eval" / "dev")
    assert params["validation_data_path"] == str(DATA / "snli_eval" / "test[:4912]")
    (tmp_path / "mine.txt").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ELMO_PLUGIN_DATA", str(DATA))
    monkeypatch.setenv("CONLL2003_TRAIN", "mine.txt")
    params = Params.from_file("conll2003_crf_tagger").as_dict()
    assert params["train_data_path"] == str(tmp_path / "mine.txt")


def test_absolute_paths_keeps_each_value_syntax(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    here = str(tmp_path)
    assert config_env.absolute_paths("wikitext::a/b.txt,conll2003::/x/y") == (
        f"wikitext::{here}/a/b.txt,conll2003::/x/y"
    )
    assert config_env.absolute_paths("d/../e/test[:4912]") == f"{here}/e/test[:4912]"
    assert config_env.absolute_paths("lit#lit/0/train.ids") == f"{here}/lit#{here}/lit/0/train.ids"
    assert config_env.absolute_paths("https://host/x.json") == "https://host/x.json"
    assert config_env.absolute_paths("") == ""


def test_a_missing_default_names_elmo_plugin_data_and_the_folder_it_was_resolved_against(
    monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ELMO_PLUGIN_DATA", "../shared/data")
    folder = tmp_path.parent / "shared" / "data"
    with pytest.raises(ConfigurationError) as error:
        Params.from_file("snli_esim_elmo")
    assert str(error.value) == (
        f"SNLI_DEV={folder}/snli_eval/test[:4912]: no such file or folder: "
        f"{folder}/snli_eval/test (SNLI_DEV is unset: its default is under "
        f"ELMO_PLUGIN_DATA=../shared/data, resolved against {tmp_path} to {folder}, which is not "
        "a folder)"
    )


def test_a_missing_relative_path_names_the_variable_its_value_and_the_current_folder(
    monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONLL2003_TRAIN", "nowhere/eng.train")
    with pytest.raises(ConfigurationError) as error:
        Params.from_file("conll2003_crf_tagger")
    assert str(error.value) == (
        f"CONLL2003_TRAIN=nowhere/eng.train: no such file or folder: {tmp_path}/nowhere/eng.train"
        f" (relative paths are resolved against the current folder, {tmp_path})"
    )


def test_a_misspelt_config_name_gets_the_closest_names(capsys):
    from elmo_plugin.commands.elmo_config import ElmoConfig
    from tests.elmo_plugin.analysis.conftest import run_command

    with pytest.raises(FileNotFoundError, match=r"did you mean snli_esim_elmo or snli_esim\?"):
        Params.from_file("snli_esim_elmoo")
    with pytest.raises(
        FileNotFoundError,
        match=r"^training_config/sst_bcn_elmoo.jsonnet: no such config file; did you mean "
        r"sst_bcn_elmo",
    ):
        Params.from_file("training_config/sst_bcn_elmoo.jsonnet")
    with pytest.raises(FileNotFoundError, match=r"^zzz: .*; the packaged configs: bilm_finetune, "):
        Params.from_file("zzz")
    with pytest.raises(
        SystemExit, match=r"elmo-config: error: conll2003_crf_tager: .*did you mean "
    ):
        run_command(ElmoConfig, ["elmo-config", "conll2003_crf_tager"])


def test_relative_word_vectors_and_optional_inputs_are_made_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNLI_WORD_VECTORS", "vectors/glove.txt.gz")
    monkeypatch.setenv("BILM_VOCAB", "~/vocab.txt")
    snli = config_env.config_ext_vars(config_env.config_path("snli_esim"))
    assert snli["SNLI_WORD_VECTORS"] == str(tmp_path / "vectors" / "glove.txt.gz")
    bilm = config_env.config_ext_vars(config_env.config_path("bilm_small"))
    assert bilm["BILM_VOCAB"] == os.path.expanduser("~/vocab.txt")


def test_the_weight_file_rule_of_the_options_file_in_force(monkeypatch):
    """`ELMO_WEIGHT_FILE`'s default follows one rule: the shipped weights for the shipped options;
    none needed for a biLM that stands alone (a name, a Hub id, an archive); an options file's
    path needs it set (it got the shipped weights, another biLM's, and a Hub id got them too)."""
    from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE

    default = config_env.weight_file_default
    assert default(None) == default(str(SHIPPED_OPTIONS_FILE)) == str(SHIPPED_WEIGHT_FILE)
    for name in ("wikipedia_1024", "original", "hf://org/repo", "bilm.tar.gz"):
        assert default(name) == "", name
    assert default(str(OPTIONS_FILE)) is None and default("https://x/options.json") is None
    monkeypatch.setenv("ELMO_OPTIONS_FILE", str(OPTIONS_FILE))
    monkeypatch.delenv("ELMO_WEIGHT_FILE")
    with pytest.raises(config_env.ConfigError, match="is an options file: set ELMO_WEIGHT_FILE"):
        Params.from_file("conll2003_crf_tagger_elmo")
    assert "ELMO_WEIGHT_FILE" not in config_env.config_defaults()
    monkeypatch.setenv("ELMO_WEIGHT_FILE", str(WEIGHT_FILE))  # set: no default needed
    Params.from_file("conll2003_crf_tagger_elmo")
    monkeypatch.setenv("ELMO_OPTIONS_FILE", "wikipedia_1024")
    monkeypatch.delenv("ELMO_WEIGHT_FILE")
    embedder = Params.from_file("conll2003_crf_tagger_elmo").as_dict()["model"][
        "text_field_embedder"
    ]
    assert embedder["weight_file"] == ""
