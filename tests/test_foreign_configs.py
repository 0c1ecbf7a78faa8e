"""A config without the plugin's components trains the same with and without the plugin loaded
(issue 58 item 3): the hooks of `elmo_plugin.hooks` leave other people's models alone."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# an allennlp-models-style text classifier over AllenNLP's own components only
CONFIG = {
    "random_seed": 3,
    "numpy_seed": 3,
    "pytorch_seed": 3,
    "dataset_reader": {"type": "text_classification_json", "tokenizer": {"type": "whitespace"}},
    "train_data_path": "train.jsonl",
    "validation_data_path": "dev.jsonl",
    "model": {
        "type": "basic_classifier",
        "text_field_embedder": {
            "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 8}}
        },
        "seq2vec_encoder": {"type": "lstm", "input_size": 8, "hidden_size": 6},
        "dropout": 0.2,
    },
    "data_loader": {"batch_size": 4, "shuffle": True},
    "trainer": {
        "optimizer": {"type": "adam", "lr": 0.01},
        "learning_rate_scheduler": {"type": "step", "step_size": 1, "gamma": 0.5},
        "num_epochs": 1,
        "cuda_device": -1,
    },
}

PROBE = """
import sys
from allennlp.models import Model
hooked = getattr(Model.get_regularization_penalty, "_elmo_plugin", False)
name = sys.argv[sys.argv.index("-s") + 1]
with open(f"probe_{name}.txt", "w") as out:
    out.write(f"{'elmo_plugin' in sys.modules} {hooked}")
"""

# metrics of the machine, not of the model
UNEQUAL = ("duration", "memory", "epoch", "start_epoch")

WORDS = "good bad fine awful great poor nice dull".split()


def _data(folder: Path) -> None:
    for name, size in (("train", 40), ("dev", 12)):
        with open(folder / f"{name}.jsonl", "w") as out:
            for i in range(size):
                words = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(3 + i % 4)]
                label = "pos" if WORDS.index(words[0]) % 2 == 0 else "neg"
                out.write(json.dumps({"text": " ".join(words), "label": label}) + "\n")


@pytest.mark.slow
def test_a_config_without_the_plugins_components_trains_the_same_with_the_plugin(tmp_path):
    _data(tmp_path)
    (tmp_path / "config.jsonnet").write_text(json.dumps(CONFIG))
    env = {**os.environ, "HOME": str(tmp_path)}  # no ~/.allennlp/plugins; no .allennlp_plugins here
    runs = {}
    # imported after the plugin (if any): records whether the plugin's hooks are in
    (tmp_path / "probe.py").write_text(PROBE)
    for name, extra in (("without", []), ("with", ["--include-package", "elmo_plugin"])):
        command = [sys.executable, "-m", "allennlp", "train", "config.jsonnet", "-s", name]
        command += [*extra, "--include-package", "probe"]
        runs[name] = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    logs = {name: run.communicate(timeout=300)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0, logs[name][-3000:]
    assert (tmp_path / "probe_without.txt").read_text() == "False False"
    assert (tmp_path / "probe_with.txt").read_text() == "True True"
    configs = [json.loads((tmp_path / name / "config.json").read_text()) for name in runs]
    assert configs[0] == configs[1]
    weights = [torch.load(tmp_path / name / "best.th", weights_only=True) for name in runs]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])
    metrics = [json.loads((tmp_path / name / "metrics.json").read_text()) for name in runs]
    measured = [
        {key: value for key, value in run.items() if not any(w in key for w in UNEQUAL)}
        for run in metrics
    ]
    assert "validation_accuracy" in measured[0] and "training_loss" in measured[0]
    assert measured[0] == measured[1]
