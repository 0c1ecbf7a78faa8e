"""`allennlp train` from the command line with the plugin's TokenEmbedder on a CoNLL-2003 slice."""

import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
from allennlp.models.archival import load_archive

from elmo_bilm import load_bilm_tf
from elmo_plugin.modules.scalar_mix import ElmoScalarMix
from tests.conftest import DATA, OPTIONS_FILE, WEIGHT_FILE

pytestmark = pytest.mark.slow  # trains models or starts subprocesses


@pytest.fixture(scope="module")
def trained(tmp_path_factory, repo_root):
    """`allennlp train` of the tagger on a 48-sentence slice: `(folder, completed process)`."""
    tmp_path = tmp_path_factory.mktemp("ner")
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
    return tmp_path, subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )


def test_train_crf_tagger_with_plugin_elmo(trained):
    tmp_path, result = trained
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


def test_the_precision_benchmark_scores_a_trained_tagger(trained, capsys, monkeypatch):
    """`python -m elmo_benchmarks.precision --ner-archive A --ner-dev F`: A's dev F1 on F with its
    biLM in each precision, nothing else."""
    from elmo_benchmarks import precision as bench

    tmp_path, result = trained
    assert result.returncode == 0, result.stderr[-4000:]
    lines = (DATA / "conll2003" / "eng.testa").read_text().splitlines(keepends=True)
    dev = tmp_path / "dev.txt"  # the first 200 lines: not the config's validation file
    dev.write_text("".join(lines[:200]))
    archive = str(tmp_path / "out" / "model.tar.gz")
    argv = ["elmo_benchmarks.precision", "--ner-archive", archive, "--ner-dev", str(dev)]
    monkeypatch.setattr(sys, "argv", argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bfloat16's float32 fallback on a CPU without AVX-512 BF16
        bench.main()
    out = capsys.readouterr().out
    records = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("BENCH ")]
    assert [r["precision"] for r in records] == ["float32", "bfloat16", "int8"]
    assert all(r["bench"] == "precision_ner" for r in records)
    assert all(r["archive"] == archive and r["dev"] == str(dev) for r in records)
    assert all(0.0 <= r["f1"] <= 1.0 for r in records)
