"""The one-call GPU pretraining script (`elmo_benchmarks.gpu_pretrain`), exercised on the CPU at a tiny
size: pack -> train -> ship, and the shipped files evaluate to the perplexity the run reported
when AllenNLP's evaluation (`elmo_benchmarks.shipped_bilm`'s) reads them."""

import gzip
import json
import lzma
import sys
from io import BytesIO
from pathlib import Path
from unittest import mock

import numpy
import pytest
import torch

from elmo_benchmarks import gpu_pretrain, shipped_bilm

WORDS = "the a of cat dog sat on mat ran far unusualword".split()


def _corpus(tmp_path: Path) -> Path:
    rng = numpy.random.default_rng(0)
    corpus = tmp_path / "wiki"
    corpus.mkdir()
    for name, count in (("AA_wiki_00", 60), ("AB_wiki_98", 12)):
        lines = [" ".join(rng.choice(WORDS, rng.integers(1, 9))) for _ in range(count)]
        lines.append(" ".join(["long"] * 57))  # split at 50, as the LM corpus reader does
        with gzip.open(corpus / f"{name}.txt.gz", "wt") as handle:
            handle.write("\n".join(lines) + "\n")
    return corpus


@pytest.mark.slow
def test_pack_train_ship_round_trip(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    wikitext = tmp_path / "wiki.test.tokens"
    wikitext.write_text(" = Title = \n the cat sat on the mat . \n a dog ran far \n")
    packed = tmp_path / "pretrain.xz"
    gpu_pretrain.pack(corpus, wikitext, packed)
    with numpy.load(BytesIO(lzma.decompress(packed.read_bytes()))) as data:
        assert data["train_lengths"].tolist()[-2:] == [50, 7]
        assert data["heldout_lengths"].size == 14 and data["wikitext_lengths"].tolist() == [7, 4]
        types = bytes(data["types"]).decode().split("\n")
        assert types[:3] == ["<S>", "</S>", "long"]

    run = tmp_path / "run"
    argv = ["gpu_pretrain", "train", "--data", str(packed), "--out", str(run), "--device", "cpu"]
    # --steps, not a --seconds budget: the run's length (and so its outcome) is the same on a
    # loaded machine as on a quiet one
    argv += ["--steps", "20", "--dim", "16", "--projection-dim", "8", "--batch-sentences", "8"]
    argv += ["--eval-sentences", "8", "--warmup", "4", "--log-every", "2", "--no-bf16"]
    monkeypatch.setattr(sys, "argv", argv)
    torch.set_num_threads(1)
    gpu_pretrain.main()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["steps"] == 20 and metrics["planned_steps"] == 20
    assert [entry["step"] for entry in metrics["log"]] == list(range(2, 21, 2))
    first, last = metrics["log"][0]["train_perplexity"], metrics["log"][-1]["train_perplexity"]
    assert last < first  # it learns
    assert sorted(p.name for p in run.glob("weights.part*")) == ["weights.part0"]

    shipped = tmp_path / "shipped"
    gpu_pretrain.ship(run, shipped)
    monkeypatch.setenv("BILM_DEV", f"text::{corpus / 'AB_wiki_98.txt.gz'}")
    with mock.patch.object(sys, "argv", ["shipped_bilm", "--bilm-dir", str(shipped)]):
        capsys.readouterr()
        shipped_bilm.main()
    record = json.loads(capsys.readouterr().out.split("BENCH ", 1)[1])
    reported = metrics["float16"]["heldout"]
    for key in ("perplexity", "perplexity_forward", "perplexity_backward"):
        # float32 sums of ~100 log-probabilities in another order: relative 1e-5 is ~100 units
        assert record[f"dev_{key}"] == pytest.approx(reported[key], rel=1e-5)

    # trained on from the shipped files (issue 71 item 2): with a learning rate of 0 the run
    # starts and ends at the shipped weights, so it reports the first run's perplexity and
    # saves the same float16 values; its options are the shipped ones, not --dim's
    again = tmp_path / "again"
    argv[argv.index("--out") + 1] = str(again)
    argv[argv.index("--dim") + 1] = "32"
    argv += ["--init-from", str(shipped), "--lr", "0", "--steps", "1", "--warmup", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    gpu_pretrain.main()
    continued = json.loads((again / "metrics.json").read_text())
    assert continued["init_from"] == str(shipped) and continued["options"]["lstm"]["dim"] == 16
    for split in ("heldout", "wikitext"):
        assert continued["float16"][split]["perplexity"] == pytest.approx(
            metrics["float16"][split]["perplexity"], rel=1e-6
        )  # the same weights and batches: only float32 summation order differs
    saved = torch.load(BytesIO((run / "weights.part0").read_bytes()), weights_only=True)
    resumed = torch.load(BytesIO((again / "weights.part0").read_bytes()), weights_only=True)
    assert saved.keys() == resumed.keys()
    assert all(torch.equal(saved[k], resumed[k]) for k in saved)
    without_softmax = tmp_path / "no_softmax"
    without_softmax.mkdir()
    bilm = gpu_pretrain.resolve_bilm(str(shipped)).load()
    gpu_pretrain.export_bilm_tf(
        bilm, without_softmax / "options.json", without_softmax / "weights.hdf5"
    )
    argv[argv.index("--init-from") + 1] = str(without_softmax)
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="no softmax/W and softmax/b"):
        gpu_pretrain.main()
