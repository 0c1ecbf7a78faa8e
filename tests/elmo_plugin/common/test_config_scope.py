"""The config hook reaches the plugin's own configs only (issue 55 case 5, issue 58 item 3);
`allennlp elmo-config NAME --resolved` shows what AllenNLP will build."""

import json

import pytest
from _jsonnet import evaluate_snippet
from allennlp.common import Params

from elmo_plugin.common import config_env
from tests.conftest import DATA, REPO_ROOT
from tests.elmo_plugin.analysis.conftest import run_command

USER_CONFIG = '{"train_data_path": std.extVar("SNLI_TRAIN"), "seed": std.extVar("SEED")}'


def test_a_users_own_config_gets_no_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("SNLI_TRAIN", raising=False)
    monkeypatch.delenv("SEED", raising=False)
    config = tmp_path / "mine.jsonnet"
    config.write_text(USER_CONFIG)
    with pytest.raises(RuntimeError, match="undefined external variable: S"):
        evaluate_snippet("mine", USER_CONFIG)  # jsonnet alone
    with pytest.raises(RuntimeError, match="undefined external variable: S"):
        Params.from_file(str(config))
    assert not config_env.is_plugin_config(str(config))
    monkeypatch.setenv("SEED", "4")
    monkeypatch.setenv("SNLI_TRAIN", "anything")  # not checked: not the plugin's variable here
    assert Params.from_file(str(config)).as_dict() == {"train_data_path": "anything", "seed": "4"}


def test_a_config_importing_the_plugins_libsonnet_gets_the_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("SEED", raising=False)
    libsonnet = config_env.CONFIG_DIR / "snli_esim.libsonnet"
    config = tmp_path / "mine.jsonnet"
    config.write_text(
        f"(import {json.dumps(str(libsonnet))})() + {{seed_read: std.extVar('SEED')}}"
    )
    assert config_env.is_plugin_config(str(config))
    params = Params.from_file(str(config)).as_dict()
    assert params["seed_read"] == "13370"
    assert params["train_data_path"] == str(DATA / "snli_eval" / "dev")
    for packaged in (
        config_env.config_path("snli_esim"),
        REPO_ROOT / "training_config/sst_bcn.jsonnet",
    ):
        assert config_env.is_plugin_config(str(packaged))


def test_resolved_prints_the_json_allennlp_builds_with_each_variables_source(
    monkeypatch, capsys, tmp_path
):
    from elmo_plugin.commands.elmo_config import ElmoConfig

    monkeypatch.delenv("SEED", raising=False)
    monkeypatch.delenv("SNLI_TRAIN", raising=False)
    monkeypatch.setenv("SNLI_DEV", str(DATA / "snli_eval" / "dev[:10]"))
    run_command(ElmoConfig, ["elmo-config", "snli_esim_elmo", "--resolved"])
    out = capsys.readouterr().out
    comments = [line for line in out.splitlines() if line.startswith("//")]
    assert f"// SNLI_TRAIN = {DATA}/snli_eval/dev  (default from ELMO_PLUGIN_DATA)" in comments
    assert f"// SNLI_DEV = {DATA}/snli_eval/dev[:10]  (set in the environment)" in comments
    assert "// SEED = 13370  (the plugin's default)" in comments
    assert any(line.startswith("// ELMO_PROJECTION_DIM = ") for line in comments)
    # the printed text is a config AllenNLP reads as it is, to the same Params
    (tmp_path / "resolved.jsonnet").write_text(out)
    resolved = Params.from_file(str(tmp_path / "resolved.jsonnet")).as_dict()
    assert resolved == Params.from_file("snli_esim_elmo").as_dict()
    assert resolved["train_data_path"] == str(DATA / "snli_eval" / "dev")


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["snli_esim_elmo", "snli_esim"],
            "elmo-config: error: takes one config name or path, got 2: snli_esim_elmo snli_esim "
            "(usage: allennlp elmo-config [NAME] [--resolved])",
        ),
        (
            ["/nope/x.jsonnet"],
            "elmo-config: error: /nope/x.jsonnet: no such config file; `elmo-plugin elmo-config` "
            "lists the packaged configs",
        ),
        (
            ["--bogus"],
            "elmo-config: error: unknown option --bogus (usage: allennlp elmo-config [NAME] "
            "[--resolved])",
        ),
        (
            ["snli_esim", "--resolved", "--bogus"],
            "elmo-config: error: unknown option --bogus (usage: allennlp elmo-config [NAME] "
            "[--resolved])",
        ),
    ],
)
def test_bad_arguments_are_one_line_that_matches_them(argv, message):
    from elmo_plugin.commands.elmo_config import ElmoConfig

    with pytest.raises(SystemExit) as exit_:
        run_command(ElmoConfig, ["elmo-config", *argv])
    assert exit_.value.code == message  # printed as one line on stderr, exit status 1


def test_a_packaged_name_that_is_also_a_folder_here_is_the_packaged_config(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "snli_esim").mkdir()
    (tmp_path / "notes").mkdir()
    assert (
        Params.from_file("snli_esim").as_dict()
        == Params.from_file(str(config_env.CONFIG_DIR / "snli_esim.jsonnet")).as_dict()
    )
    with pytest.raises(FileNotFoundError, match=r"^notes: a folder, not a config file"):
        Params.from_file("notes")
