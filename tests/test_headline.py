"""The README's headline command runs as printed (output directory aside), on slices of its
default data (the bundled SNLI dev and test pairs) to stay quick."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # trains models or starts subprocesses


def test_snli_esim_elmo_headline_command(tmp_path, repo_root):
    allennlp = os.path.join(os.path.dirname(sys.executable), "allennlp")
    command = [
        allennlp,
        "train",
        "training_config/snli_esim_elmo.jsonnet",
        "-s",
        str(tmp_path / "out"),
        "--include-package",
        "elmo_plugin",
    ]
    snli = os.path.join(os.environ["ELMO_PLUGIN_DATA"], "snli_eval")
    env = dict(
        os.environ,
        SNLI_TRAIN=f"{snli}/dev[:96]",
        SNLI_DEV=f"{snli}/test[:48]",
        SNLI_TEST=f"{snli}/test[4912:4960]",
    )
    result = subprocess.run(
        command, cwd=repo_root, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert "test_accuracy" in metrics and metrics["training_reg_loss"] > 0
