"""Issue 55's unclear answers, each one line that says what to fix: a biLM name given with a
weight file, a misspelt biLM name, a full disk while `allennlp train` checkpoints."""

import json
import resource
import signal
import subprocess
import sys

import pytest
from allennlp.common import Params

from elmo_bilm import Elmo
from elmo_bilm.cli.embed import main as embed_main
from elmo_plugin.common.config_env import ConfigError
from tests.conftest import WEIGHT_FILE
from tests.test_foreign_configs import CONFIG, _data


def test_a_bilm_name_with_a_weight_file_is_one_line(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("a cat\n")
    argv = [str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--options-file", "original"]
    assert embed_main([*argv, "--weight-file", str(WEIGHT_FILE)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "elmo-embed: error: 'original' is a biLM's name, which stands for its options and "
        f"weights: give it alone, without the weight file '{WEIGHT_FILE}' (or an options file's "
        "path with it)"
    ]


def test_a_misspelt_bilm_name_gets_the_closest_names(monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"^orignal: no such options file, nor a biLM's "):
        Elmo("orignal", None, 1)
    monkeypatch.setenv("ELMO_OPTIONS_FILE", "orignal")
    monkeypatch.delenv("ELMO_WEIGHT_FILE")
    with pytest.raises(ConfigError) as error:
        Params.from_file("conll2003_crf_tagger_elmo")
    assert str(error.value) == (
        "ELMO_OPTIONS_FILE: orignal: no such options file, nor a biLM's name; did you mean "
        "original or original_5.5b?"
    )
    monkeypatch.setenv("ELMO_OPTIONS_FILE", "wikipedia_124")
    with pytest.raises(
        ConfigError, match=r"did you mean wikipedia_1024 or wikipedia_1024_256 or wikipedia\?$"
    ):
        Params.from_file("conll2003_crf_tagger_elmo")


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_full_disk_while_allennlp_train_checkpoints_is_one_line(tmp_path):
    _data(tmp_path)
    config = json.loads(json.dumps(CONFIG))
    config["model"]["seq2vec_encoder"].update(input_size=64, hidden_size=256)  # ~1.4 MB of weights
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["embedding_dim"] = 64
    config["trainer"]["checkpointer"] = {"type": "elmo_plugin_safe"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    command = [sys.executable, "-m", "allennlp", "train", "config.json", "-s", "out"]
    result = subprocess.run(
        [*command, "--include-package", "elmo_plugin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_limit_file_size(512 * 1024),
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("allennlp: error: out: writing a checkpoint failed (")
    assert "MB free; full disk?)" in last
