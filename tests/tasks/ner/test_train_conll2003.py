"""`allennlp train` from the command line with the plugin's TokenEmbedder on a CoNLL-2003 slice."""

import json
import os
import subprocess
import sys

import pytest
import torch
from allennlp.models.archival import load_archive

from elmo_bilm import load_bilm_tf
from elmo_plugin.modules.scalar_mix import ElmoScalarMix
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

pytestmark = pytest.mark.slow  # trains models or starts subprocesses


def test_train_crf_tagger_with_plugin_elmo(tmp_path, repo_root):
    overrides = {
        "dataset_reader.max_instances": 48,
        "data_loader.batch_sampler.batch_size": 16,
        "trainer.num_epochs": 2,
    }
    command = [
        os.path.join(os.path.dirname(sys.executable), "allennlp"),
        "train",
        str(repo_root / "fixtures" / "ner_token_embedder.jsonnet"),
        "-s",
        str(tmp_path / "out"),
        "--include-package",
        "elmo_plugin",
        "-o",
        json.dumps(overrides),
    ]
    # run outside the repository: the plugin is found through --include-package alone
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["epoch"] == 1
    assert "test_f1-measure-overall" in metrics
    # lambda * ||w||^2 was part of the training loss (it is 0 only before the first update)
    assert metrics["training_reg_loss"] > 0

    archive = load_archive(str(tmp_path / "out" / "model.tar.gz"))
    mixes = [m for m in archive.model.modules() if isinstance(m, ElmoScalarMix)]
    assert len(mixes) == 1 and mixes[0].l2_coefficient == 0.1
    expected = 0.1 * (mixes[0].raw_weights() ** 2).sum()
    assert archive.model.get_regularization_penalty().item() == pytest.approx(expected.item())
    # the biLM stayed frozen: identical to the file it was loaded from
    fresh = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).state_dict()
    trained = archive.model.text_field_embedder.token_embedder_elmo.elmo.bilm.state_dict()
    assert all(torch.equal(fresh[k], trained[k]) for k in fresh)
