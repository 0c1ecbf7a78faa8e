import json
import os
import signal
import subprocess
import sys
import tarfile

import h5py
import numpy
import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.data import Vocabulary
from allennlp.models.archival import load_archive
from allennlp.modules.elmo import batch_to_ids
from flaky import flaky

from elmo_bilm import load_bilm_tf
from elmo_plugin.commands.elmo_export import export_archive, export_model
from elmo_plugin.lm.models.bilm_language_model import BiLmLanguageModel
from elmo_plugin.lm.vocabulary import BilmTfVocabulary
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
from elmo_plugin.token_embedders import ElmoPluginTokenEmbedder
from elmo_plugin.training.optimizer_state import OPTIMIZER_STATE_NAME
from tests.conftest import free_port
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close

pytestmark = pytest.mark.slow  # trains models or starts subprocesses

TINY = "fixtures/bilm_tiny.jsonnet"


def allennlp_command(*args):
    return [
        os.path.join(os.path.dirname(sys.executable), "allennlp"),
        *map(str, args),
        "--include-package",
        "elmo_plugin",
    ]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, repo_root):
    out = tmp_path_factory.mktemp("bilm_tiny")
    train_model_from_file(str(repo_root / TINY), str(out / "run"))
    return out / "run"


@pytest.mark.numerics
def test_training_perplexity_falls(tiny_run):
    epochs = [json.loads((tiny_run / f"metrics_epoch_{k}.json").read_text()) for k in range(4)]
    first, last = epochs[0]["training_perplexity"], epochs[-1]["training_perplexity"]
    assert last < 0.7 * first, (first, last)
    assert epochs[-1]["validation_perplexity"] < 0.7 * epochs[0]["training_perplexity"]
    for metrics in epochs:
        assert {"training_perplexity_forward", "training_perplexity_backward"} <= metrics.keys()


@pytest.mark.numerics
def test_sampled_softmax_agrees_with_full_softmax_in_expectation():
    numpy.random.seed(0)
    torch.manual_seed(0)
    vocab = Vocabulary(non_padded_namespaces=())
    vocab.add_tokens_to_namespace(
        [f"w{i}" for i in range(198)], "lm_tokens"
    )  # + padding, OOV = 200
    options = json.loads(open(os.environ["ELMO_OPTIONS_FILE"]).read())
    model = BiLmLanguageModel(vocab, options=options, num_samples=100)
    hidden = torch.randn(500, 16, requires_grad=True)
    zipf = 1.0 / numpy.arange(1, 199)
    targets = torch.from_numpy(
        numpy.random.choice(198, 500, p=zipf / zipf.sum()) + 2
    )  # words, not padding/OOV
    model.eval()
    full = model._nll_sum(hidden, targets) / 500
    full_grad = torch.autograd.grad(full, hidden)[0]
    model.train()
    draws = [model._nll_sum(hidden, targets) / 500 for _ in range(300)]
    sampled = torch.stack(draws).mean()
    sampled_grad = torch.autograd.grad(sampled, hidden)[0]
    # sampled softmax is a slightly biased estimator of the loss; its gradient matches closely
    assert abs(sampled.item() - full.item()) < 0.08 * full.item()
    assert (sampled_grad - full_grad).norm() < 0.05 * full_grad.norm()
    with pytest.raises(ValueError, match="num_samples"):
        BiLmLanguageModel(vocab, options=options, num_samples=500)


@pytest.mark.numerics
def test_archive_feeds_embedder_elmo_embed_and_export(tiny_run, tmp_path, repo_root):
    archive = tiny_run / "model.tar.gz"
    bilm = load_archive(str(archive)).model.bilm.eval()
    sentences = [["the", "cat", "sat", "."], ["a", "dog"]]
    char_ids = batch_to_ids(sentences)
    with torch.no_grad():
        expected = bilm(char_ids)["activations"]
    embedder = ElmoPluginTokenEmbedder(
        archive_file=str(archive), scalar_mix_parameters=[-9e10, -9e10, 1.0], dropout=0.0
    )
    assert_float32_close(embedder.eval()(char_ids), expected[-1], ONE_REDUCTION)
    # one loader for every source: the dropout asked for, whatever the archive was trained with
    assert load_bilm_or_archive(archive_file=str(archive), dropout=0.25).lstm.dropout.p == 0.25
    assert (
        load_bilm_or_archive(archive_file=str(archive)).lstm.dropout.p
        == embedder.elmo.bilm.lstm.dropout.p
        == 0.0
    )
    vocab = load_archive(str(archive)).model.vocab
    assert (
        BiLmLanguageModel(vocab, pretrained_archive=str(archive), dropout=0.1).bilm.lstm.dropout.p
        == 0.1
    )

    export_archive(str(archive), str(tmp_path / "bilm_tf"))
    exported = load_bilm_tf(
        tmp_path / "bilm_tf" / "options.json", tmp_path / "bilm_tf" / "weights.hdf5"
    ).eval()
    with torch.no_grad():
        for a, b in zip(expected, exported(char_ids)["activations"]):
            assert torch.equal(a, b)
    lines = (tmp_path / "bilm_tf" / "vocab.txt").read_text().split("\n")
    assert lines[:3] == ["<S>", "</S>", "<UNK>"]
    vocab = BilmTfVocabulary.from_bilm_tf_vocab(str(tmp_path / "bilm_tf" / "vocab.txt"))
    original = load_archive(str(archive)).model.vocab
    # same tokens; bilm-tf order puts <S>, </S> first and keeps the frequency order of the rest
    read_back = vocab.get_index_to_token_vocabulary("lm_tokens")
    trained = original.get_index_to_token_vocabulary("lm_tokens")
    assert set(read_back.values()) == set(trained.values())
    assert [read_back[i] for i in range(2, 4)] == ["<S>", "</S>"]
    rest = [t for _, t in sorted(trained.items()) if t not in ("<S>", "</S>")]
    assert [t for _, t in sorted(read_back.items()) if t not in ("<S>", "</S>")] == rest
    with pytest.raises(FileExistsError):
        export_archive(str(archive), str(tmp_path / "bilm_tf"))

    # elmo-embed takes the archive too (run from the repo: subcommands come from .allennlp_plugins)
    (tmp_path / "in.txt").write_text("the cat sat .\na dog\n")
    result = subprocess.run(
        allennlp_command(
            "elmo-embed",
            tmp_path / "in.txt",
            tmp_path / "out.hdf5",
            "--archive-file",
            archive,
            "--layers",
            "top",
        ),
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    import h5py

    with h5py.File(tmp_path / "out.hdf5", "r") as out:
        assert_float32_close(out["1"][...], expected[-1][1, :2], NETWORK)


def finetune(repo_root, out, epochs=2):
    """`bilm_finetune.jsonnet` with Adam (the tiny run's optimizer) into `out`."""
    overrides = {"trainer.optimizer": {"type": "adam", "lr": 0.003}, "trainer.num_epochs": epochs}
    train_model_from_file(
        str(repo_root / "training_config" / "bilm_finetune.jsonnet"),
        str(out),
        overrides=json.dumps(overrides),
    )


@pytest.mark.numerics
def test_finetune_reports_dev_perplexity_before_and_after(
    tiny_run, tmp_path, repo_root, monkeypatch
):
    fixtures = repo_root / "fixtures" / "lm_corpus"
    monkeypatch.setenv("FINETUNE_TRAIN", f"text::{fixtures / 'train.txt'}")
    monkeypatch.setenv("FINETUNE_DEV", f"text::{fixtures / 'dev.txt'}")
    monkeypatch.setenv("BILM_PRETRAINED_ARCHIVE", str(tiny_run / "model.tar.gz"))
    finetune(repo_root, tmp_path / "ft")
    before = json.loads((tmp_path / "ft" / "metrics_before_training.json").read_text())
    after = json.loads((tmp_path / "ft" / "metrics.json").read_text())
    # starts from the archive (softmax included): already far below the uniform 40+ perplexity
    tiny_final = json.loads((tiny_run / "metrics.json").read_text())["validation_perplexity"]
    assert before["validation_perplexity"] == pytest.approx(tiny_final, rel=1e-4)
    assert after["validation_perplexity"] < before["validation_perplexity"]
    # the pretraining run's optimizer state came along and goes on into the fine-tuned archive
    with tarfile.open(tiny_run / "model.tar.gz") as tar:
        assert OPTIMIZER_STATE_NAME in tar.getnames()
    with tarfile.open(tmp_path / "ft" / "model.tar.gz") as tar:
        assert OPTIMIZER_STATE_NAME in tar.getnames()
    # Adam's step count: the tiny run's steps, then 2 epochs x 4 batches more
    pretrained, tuned = (
        torch.load(path / OPTIMIZER_STATE_NAME, weights_only=False)["state_dict"]["state"][0]
        for path in (tiny_run, tmp_path / "ft")
    )
    assert int(tuned["step"]) == int(pretrained["step"]) + 8

    # from exported bilm-tf files + vocab.txt
    export_archive(str(tiny_run / "model.tar.gz"), str(tmp_path / "tf"))
    monkeypatch.setenv("BILM_PRETRAINED_ARCHIVE", "")
    monkeypatch.setenv("ELMO_OPTIONS_FILE", str(tmp_path / "tf" / "options.json"))
    monkeypatch.setenv("ELMO_WEIGHT_FILE", str(tmp_path / "tf" / "weights.hdf5"))
    monkeypatch.setenv("BILM_VOCAB", str(tmp_path / "tf" / "vocab.txt"))
    finetune(repo_root, tmp_path / "ft2")
    before = json.loads((tmp_path / "ft2" / "metrics_before_training.json").read_text())
    after = json.loads((tmp_path / "ft2" / "metrics.json").read_text())
    # the exported softmax came along (matched by token): same starting point as the archive
    assert before["validation_perplexity"] == pytest.approx(tiny_final, rel=1e-4)
    assert after["validation_perplexity"] < before["validation_perplexity"]


@pytest.mark.numerics
def test_the_carried_optimizer_state_is_what_fine_tuning_gains_from(
    tiny_run, tmp_path, repo_root, monkeypatch
):
    """`elmo_plugin_optimizer_state`'s reason (docs/design.md): AllenNLP's `from_archive` starts
    the optimizer fresh, and the first epoch of fine-tuning from the same weights then ends above
    the dev perplexity it started from, where the carried state lowers it (the figures are in
    docs/design.md)."""
    fixtures = repo_root / "fixtures" / "lm_corpus"
    monkeypatch.setenv("FINETUNE_TRAIN", f"text::{fixtures / 'train.txt'}")
    monkeypatch.setenv("FINETUNE_DEV", f"text::{fixtures / 'dev.txt'}")
    stripped = tmp_path / "without_optimizer_state.tar.gz"
    with tarfile.open(tiny_run / "model.tar.gz") as source, tarfile.open(stripped, "w:gz") as copy:
        for member in source.getmembers():
            if member.name != OPTIMIZER_STATE_NAME:
                copy.addfile(member, source.extractfile(member) if member.isfile() else None)
    perplexity = {}
    for name, archive in (("carried", tiny_run / "model.tar.gz"), ("fresh", stripped)):
        monkeypatch.setenv("BILM_PRETRAINED_ARCHIVE", str(archive))
        finetune(repo_root, tmp_path / name, epochs=1)
        before = json.loads((tmp_path / name / "metrics_before_training.json").read_text())
        after = json.loads((tmp_path / name / "metrics.json").read_text())
        perplexity[name] = (before["validation_perplexity"], after["validation_perplexity"])
    assert perplexity["carried"][0] == perplexity["fresh"][0]  # the same weights to start from
    assert perplexity["carried"][1] < perplexity["carried"][0] < perplexity["fresh"][1]


def test_finetune_from_bilm_tf_files_without_softmax_skips_the_before_perplexity(
    tmp_path, repo_root, monkeypatch
):
    fixtures = repo_root / "fixtures" / "lm_corpus"
    monkeypatch.setenv("FINETUNE_TRAIN", f"text::{fixtures / 'train.txt'}")
    monkeypatch.setenv("FINETUNE_DEV", f"text::{fixtures / 'dev.txt'}")
    monkeypatch.setenv("BILM_PRETRAINED_ARCHIVE", "")
    monkeypatch.setenv("BILM_VOCAB", "")  # ELMO_*_FILE: the bilm-tf fixture, which has no softmax
    finetune(repo_root, tmp_path / "ft", epochs=1)
    assert not (tmp_path / "ft" / "metrics_before_training.json").exists()
    assert "No perplexity before training" in (tmp_path / "ft" / "out.log").read_text()
    assert (tmp_path / "ft" / "metrics.json").exists()


def test_recover_continues_an_interrupted_run(tmp_path, repo_root):
    callback = [{"type": "test_kill_after_epoch"}]
    overrides = json.dumps({"trainer.num_epochs": 12, "trainer.callbacks": callback})
    out = tmp_path / "run"
    command = allennlp_command("train", repo_root / TINY, "-s", out, "-o", overrides)
    command += ["--include-package", "tests.elmo_plugin.lm.models.kill_callback"]
    # the first run kills itself (SIGKILL) at the end of its third epoch, before that checkpoint
    killed = {**os.environ, "KILL_AFTER_EPOCH": "2"}
    result = subprocess.run(
        command, cwd=repo_root, capture_output=True, text=True, timeout=600, env=killed
    )
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    assert not (out / "metrics.json").exists()
    epoch0 = (out / "metrics_epoch_0.json").read_text()
    result = subprocess.run(
        command + ["--recover"], cwd=repo_root, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Recovering from prior training" in result.stderr
    assert (out / "metrics_epoch_0.json").read_text() == epoch0  # earlier epochs were not redone
    assert json.loads((out / "metrics.json").read_text())["epoch"] == 11
    # and it retraces an uninterrupted run exactly (AllenNLP replays the skipped epochs' randomness)
    straight = tmp_path / "straight"
    train_model_from_file(
        str(repo_root / TINY), str(straight), overrides=json.dumps({"trainer.num_epochs": 12})
    )
    for epoch in range(12):
        name = f"metrics_epoch_{epoch}.json"
        recovered = json.loads((out / name).read_text())["training_loss"]
        assert recovered == json.loads((straight / name).read_text())["training_loss"], epoch
    recovered, reference = torch.load(out / "best.th"), torch.load(straight / "best.th")
    assert all(torch.equal(recovered[name], reference[name]) for name in reference)


# One retry: torch/gloo can still abort a worker while it exits (see elmo_plugin/hooks.py).
@flaky(max_runs=2)
@pytest.mark.numerics
def test_distributed_training_with_two_cpu_workers(tmp_path, repo_root):
    distributed = {"cuda_devices": [-1, -1], "master_port": free_port()}
    overrides = json.dumps({"distributed": distributed, "trainer.num_epochs": 2})
    result = subprocess.run(
        allennlp_command("train", repo_root / TINY, "-s", tmp_path / "ddp", "-o", overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "ddp" / "metrics.json").read_text())
    assert "peak_worker_1_memory_MB" in metrics  # two worker processes trained
    assert metrics["validation_perplexity"] < 40
    assert load_archive(str(tmp_path / "ddp" / "model.tar.gz")).model.bilm.num_layers == 3


def test_dropout_applies_in_training_only(repo_root):
    vocab = Vocabulary(non_padded_namespaces=())
    vocab.add_tokens_to_namespace(["<S>", "</S>", "a", "b"], "lm_tokens")
    options = json.loads(open(os.environ["ELMO_OPTIONS_FILE"]).read())
    from allennlp.data import Batch

    from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader

    reader = LmCorpusReader()
    instance = reader.text_to_instance(["a", "b", "a"])
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(vocab)
    tensors = batch.as_tensor_dict()
    losses = {}
    for dropout in (0.0, 0.5):
        torch.manual_seed(0)
        model = BiLmLanguageModel(vocab, options=options, dropout=dropout).train()
        first, second = model(**tensors)["loss"].item(), model(**tensors)["loss"].item()
        losses[dropout] = (first, second, model.eval()(**tensors)["loss"].item())
    assert losses[0.0][0] == losses[0.0][1]
    assert losses[0.5][0] != losses[0.5][1]  # dropout active in training
    assert losses[0.5][2] == losses[0.0][2]  # and off in evaluation (same init seed)


def _small_model(**kwargs) -> BiLmLanguageModel:
    vocab = Vocabulary(non_padded_namespaces=())
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(298)], "lm_tokens")
    options = json.loads(open(os.environ["ELMO_OPTIONS_FILE"]).read())
    return BiLmLanguageModel(vocab, options=options, **kwargs)


def test_chunked_full_softmax_equals_the_unchunked_one():
    torch.manual_seed(0)
    hidden = torch.randn(300, 16, requires_grad=True)
    targets = torch.randint(2, 300, (300,))
    chunked, whole = _small_model(softmax_chunk_tokens=7), _small_model(softmax_chunk_tokens=10_000)
    whole.load_state_dict(chunked.state_dict())
    results = []
    for model in (chunked, whole):
        model.eval()
        nll = model._nll_sum(hidden, targets)
        results.append((nll.detach(), torch.autograd.grad(nll, hidden)[0]))
    torch.testing.assert_close(results[0][0], results[1][0])
    torch.testing.assert_close(results[0][1], results[1][1])


def test_loss_scale_scales_the_training_loss_only():
    torch.manual_seed(0)
    tokens = {
        "elmo": {"elmo_tokens": batch_to_ids([["<S>", "a", "b", "</S>"]])},
        "lm": {"tokens": torch.tensor([[2, 5, 6, 3]])},
    }
    plain, scaled = _small_model(), _small_model(loss_scale=20.0)
    scaled.load_state_dict(plain.state_dict())
    for model in (plain, scaled):
        model.train()
        model.bilm.lstm.dropout.p = 0.0
        model.output_dropout.p = 0.0
    torch.testing.assert_close(scaled(tokens)["loss"], 20.0 * plain(tokens)["loss"])
    assert scaled.get_metrics()["perplexity"] == pytest.approx(plain.get_metrics()["perplexity"])
    plain.eval(), scaled.eval()
    torch.testing.assert_close(scaled(tokens)["loss"], plain(tokens)["loss"])


def test_fine_tuning_from_an_archive_keeps_its_loss_scale(tiny_run, monkeypatch):
    """bilm-tf's restart trains at the pretraining's scale; the Adagrad state comes along too."""
    from elmo_plugin.lm.models import bilm_language_model

    archived = load_archive(str(tiny_run / "model.tar.gz")).model
    archived.loss_scale = 20.0
    monkeypatch.setattr(bilm_language_model, "load_bilm_archive", lambda path: archived)
    assert BiLmLanguageModel(archived.vocab, pretrained_archive="run.tar.gz").loss_scale == 20.0
    explicit = BiLmLanguageModel(archived.vocab, pretrained_archive="run.tar.gz", loss_scale=1.0)
    assert explicit.loss_scale == 1.0
    assert _small_model().loss_scale == 1.0


def test_export_of_a_model_whose_tensors_are_not_float32_cpu(tiny_run, tmp_path):
    model = load_archive(str(tiny_run / "model.tar.gz")).model
    reference = model.softmax.softmax_w.detach().to(torch.bfloat16).float()
    model = model.to(torch.bfloat16)  # .numpy() refuses bfloat16, as it refuses CUDA tensors
    export_model(model, str(tmp_path / "bf16"))
    exported = load_bilm_tf(tmp_path / "bf16" / "options.json", tmp_path / "bf16" / "weights.hdf5")
    torch.testing.assert_close(exported.lstm.projections[0], model.bilm.lstm.projections[0].float())
    lines = (tmp_path / "bf16" / "vocab.txt").read_text().split()
    with h5py.File(tmp_path / "bf16" / "weights.hdf5", "r") as weights:
        assert weights["softmax/W"].shape == (len(lines), reference.shape[1])
        row = model.vocab.get_token_index(lines[5], model.lm_namespace)
        numpy.testing.assert_array_equal(weights["softmax/W"][5], reference[row].numpy())


def test_full_softmax_never_sees_more_than_a_chunk_of_positions(monkeypatch):
    model = _small_model(softmax_chunk_tokens=16).eval()
    rows = []
    original = model._full_softmax_nll
    monkeypatch.setattr(
        model, "_full_softmax_nll", lambda h, t: rows.append(h.shape[0]) or original(h, t)
    )
    model._nll_sum(torch.randn(100, 16), torch.randint(2, 300, (100,)))
    assert rows == [16] * 6 + [4]  # logits of at most 16 x vocabulary floats at a time


def test_shipped_bilm_benchmark_evaluates_the_bilm_dir_it_is_given(tiny_run, tmp_path, repo_root):
    export_archive(str(tiny_run / "model.tar.gz"), str(tmp_path / "tf"))
    dev = repo_root / "fixtures" / "lm_corpus" / "dev.txt"
    result = subprocess.run(
        [sys.executable, "-m", "elmo_benchmarks.shipped_bilm", "--bilm-dir", str(tmp_path / "tf")],
        cwd=repo_root,
        env={**os.environ, "BILM_DEV": f"text::{dev}"},
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("BENCH "))
    bench = json.loads(line[len("BENCH ") :])
    assert bench["bilm"] == str(tmp_path / "tf")
    # the tiny biLM's own validation perplexity, not the shipped default's
    tiny_final = json.loads((tiny_run / "metrics.json").read_text())["validation_perplexity"]
    assert bench["dev_perplexity"] == pytest.approx(tiny_final, rel=1e-4)


def test_an_interrupted_export_leaves_nothing_that_blocks_a_retry(tiny_run, tmp_path, monkeypatch):
    from elmo_plugin.commands import elmo_export

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a kill while the weights are written

    out = tmp_path / "bilm_tf"
    with monkeypatch.context() as patch:
        patch.setattr(elmo_export, "export_bilm_tf", killed)
        with pytest.raises(KeyboardInterrupt):
            export_archive(str(tiny_run / "model.tar.gz"), str(out))
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no vocab.txt alone, no staging
    export_archive(str(tiny_run / "model.tar.gz"), str(out))
    assert sorted(p.name for p in out.iterdir()) == ["options.json", "vocab.txt", "weights.hdf5"]


def test_a_killed_exports_staging_folder_is_removed_by_the_next(tiny_run, tmp_path):
    """Issue 79: a staging folder left by an export killed with SIGKILL (a temporary folder
    beside the output, never removed) is removed by the next export into the folder."""
    import subprocess
    import sys

    from elmo_bilm.utils import file_sets

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    out = tmp_path / "bilm_tf"
    staging = out / f"{file_sets.STAGING_PREFIX}{child.pid}{file_sets.STAGING_SUFFIX}"
    (staging / "new").mkdir(parents=True)
    (staging / "new" / "1-weights.hdf5").write_bytes(b"half the weights of a killed export")
    export_archive(str(tiny_run / "model.tar.gz"), str(out))
    assert sorted(p.name for p in out.iterdir()) == ["options.json", "vocab.txt", "weights.hdf5"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bilm_tf"]
