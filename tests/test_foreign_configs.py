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
    logs = {name: run.communicate(timeout=600)[0] for name, run in runs.items()}
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


# allennlp-models 2.10's `training_config/pair_classification/esim_elmo.jsonnet` (not in its wheel),
# as it ships: its settings, comments left out
ESIM_ELMO = {
    "dataset_reader": {"type": "snli", "token_indexers": {"elmo": {"type": "elmo_characters"}}},
    "train_data_path": "https://allennlp.s3.amazonaws.com/datasets/snli/snli_1.0_train.jsonl",
    "validation_data_path": "https://allennlp.s3.amazonaws.com/datasets/snli/snli_1.0_dev.jsonl",
    "model": {
        "type": "esim",
        "dropout": 0.5,
        "text_field_embedder": {
            "token_embedders": {
                "elmo": {
                    "type": "elmo_token_embedder",
                    "options_file": "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway/elmo_2x4096_512_2048cnn_2xhighway_options.json",
                    "weight_file": "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway/elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5",
                    "do_layer_norm": False,
                    "dropout": 0.0,
                }
            }
        },
        "encoder": {
            "type": "lstm",
            "input_size": 1024,
            "hidden_size": 300,
            "num_layers": 1,
            "bidirectional": True,
        },
        "matrix_attention": {"type": "dot_product"},
        "projection_feedforward": {
            "input_dim": 2400,
            "hidden_dims": 300,
            "num_layers": 1,
            "activations": "relu",
        },
        "inference_encoder": {
            "type": "lstm",
            "input_size": 300,
            "hidden_size": 300,
            "num_layers": 1,
            "bidirectional": True,
        },
        "output_feedforward": {
            "input_dim": 2400,
            "num_layers": 1,
            "hidden_dims": 300,
            "activations": "relu",
            "dropout": 0.5,
        },
        "output_logit": {
            "input_dim": 300,
            "num_layers": 1,
            "hidden_dims": 3,
            "activations": "linear",
        },
        "initializer": {
            "regexes": [
                [".*linear_layers.*weight", {"type": "xavier_uniform"}],
                [".*linear_layers.*bias", {"type": "zero"}],
                [".*weight_ih.*", {"type": "xavier_uniform"}],
                [".*weight_hh.*", {"type": "orthogonal"}],
                [".*bias_ih.*", {"type": "zero"}],
                [".*bias_hh.*", {"type": "lstm_hidden_bias"}],
            ]
        },
    },
    "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": 32}},
    "trainer": {
        "optimizer": {"type": "adam", "lr": 0.0004},
        "checkpointer": {"keep_most_recent_by_count": 2},
        "validation_metric": "+accuracy",
        "num_epochs": 75,
        "grad_norm": 10.0,
        "patience": 5,
        "learning_rate_scheduler": {
            "type": "reduce_on_plateau",
            "factor": 0.5,
            "mode": "max",
            "patience": 0,
        },
    },
}


def _snli_pairs(path: Path, split: str, start: int, count: int) -> None:
    """`count` bundled SNLI pairs from line `start` of `split`, as SNLI 1.0 jsonl."""
    from tests.conftest import DATA

    columns = [
        (DATA / "snli_eval" / f"{name}.{split}").read_text().splitlines()[start : start + count]
        for name in ("s1", "s2", "labels")
    ]
    with open(path, "w") as out:
        for first, second, label in zip(*columns):
            pair = {"sentence1": first, "sentence2": second, "gold_label": label}
            out.write(json.dumps(pair) + "\n")


@pytest.mark.slow
def test_allennlp_models_esim_elmo_trains_with_the_embedder_swapped(tmp_path):
    """allennlp-models' own ESIM + ELMo config trains for an epoch with the plugin's embedder in
    place of AllenNLP's (issue 69 item 5): its `reduce_on_plateau` (AllenNLP's, which fails on
    this torch without the plugin: hook 8) steps on the validation accuracy, and `--recover`
    loads its checkpoint through AllenNLP's default checkpointer (torch's weights-only load)."""
    from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

    _snli_pairs(tmp_path / "train.jsonl", "dev", 0, 12)
    _snli_pairs(tmp_path / "dev.jsonl", "test", 0, 6)
    (tmp_path / "esim_elmo.jsonnet").write_text(json.dumps(ESIM_ELMO, indent=2))
    overrides = {
        # the swap: the plugin's embedder, same keys, on the tiny test biLM (32-wide ELMo vectors)
        "model.text_field_embedder.token_embedders.elmo.type": "elmo_plugin_token_embedder",
        "model.text_field_embedder.token_embedders.elmo.options_file": str(OPTIONS_FILE),
        "model.text_field_embedder.token_embedders.elmo.weight_file": str(WEIGHT_FILE),
        "model.encoder.input_size": 32,
        # a few local pairs, already tokenised (the default spaCy model cannot be downloaded here)
        "dataset_reader.tokenizer": {"type": "whitespace"},
        "train_data_path": "train.jsonl",
        "validation_data_path": "dev.jsonl",
        "trainer.num_epochs": 1,
        "trainer.cuda_device": -1,
        "random_seed": 3,
        "numpy_seed": 3,
        "pytorch_seed": 3,
    }
    command = [sys.executable, "-m", "allennlp", "train", "esim_elmo.jsonnet", "-s", "out"]
    command += ["--include-package", "elmo_plugin", "-o", json.dumps(overrides)]
    env = {**os.environ, "HOME": str(tmp_path)}
    for extra in ([], ["--recover"]):
        run = subprocess.run(
            command + extra,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout[-3000:]
    out = tmp_path / "out"
    config = json.loads((out / "config.json").read_text())
    assert config["trainer"]["learning_rate_scheduler"]["type"] == "reduce_on_plateau"
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    assert embedder["type"] == "elmo_plugin_token_embedder" and embedder["do_layer_norm"] is False
    epoch = json.loads((out / "metrics_epoch_0.json").read_text())
    assert 0.0 <= epoch["validation_accuracy"] <= 1.0 and epoch["training_loss"] > 0
    assert json.loads((out / "metrics.json").read_text())["best_epoch"] == 0  # after --recover
    state = torch.load(out / "training_state_e1_b0.th", weights_only=False)
    assert state["learning_rate_scheduler"]["mode"] == "max"  # AllenNLP's name, the plugin's class
    assert (out / "model.tar.gz").is_file()
    # the recovered run loaded the finished epoch's checkpoint and trained no other
    assert [p.name for p in out.glob("training_state_*")] == ["training_state_e1_b0.th"]
