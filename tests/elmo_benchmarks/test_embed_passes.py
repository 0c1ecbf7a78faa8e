"""`elmo_benchmarks.embed_passes` on the tiny random biLM: it loads, runs its passes at each thread
count and says which `elmo_bilm` it timed. No timing is asserted: the machine is shared."""

import torch

import elmo_bilm
from elmo_benchmarks import common, embed_passes
from elmo_bilm.model import fused_cell


def test_passes_at_each_thread_count(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "CACHE", tmp_path)  # the random weights go to the test's folder
    threads = torch.get_num_threads()
    try:
        records = embed_passes.main(
            ["--config", "tiny", "--sentences", "4", "--threads", "1", "2", "--passes", "2"]
        )
    finally:
        torch.set_num_threads(threads)
    assert [record["threads"] for record in records] == [1, 2]
    tokens = sum(len(sentence) for sentence in common.conll_dev_sentences(4))
    for record in records:
        assert len(record["passes_s"]) == 2 and record["tokens"] == tokens
        assert record["elmo_bilm"] == elmo_bilm.__file__
    assert (tmp_path / "tiny" / "weights.hdf5").is_file()


def test_precision_and_the_eager_cell_switch(tmp_path, monkeypatch):
    """`--cell eager` keeps every step off the compiled loop, which the int8 route otherwise
    takes wherever it builds; the record names both settings."""
    monkeypatch.setattr(common, "CACHE", tmp_path)
    monkeypatch.setattr(fused_cell, "MAX_THREADS", fused_cell.MAX_THREADS)  # main sets it
    compiled = fused_cell.lstm_cell
    used = []

    def counted(*args):
        out = compiled(*args)
        used.append(out is not None)
        return out

    monkeypatch.setattr(fused_cell, "lstm_cell", counted)
    threads = torch.get_num_threads()
    records = {}
    try:
        for cell in ("fused", "eager"):
            used.clear()
            argv = ["--config", "tiny", "--sentences", "4", "--threads", "1", "--passes", "1"]
            (records[cell],) = embed_passes.main(argv + ["--precision", "int8", "--cell", cell])
            records[cell]["used"] = list(used)
    finally:
        torch.set_num_threads(threads)
    assert records["eager"]["used"] and not any(records["eager"]["used"])
    if fused_cell._library() is not None:  # built here: every step of the fused run took it
        assert all(records["fused"]["used"])
    assert [(r["precision"], r["cell"]) for r in records.values()] == [
        ("int8", "fused"),
        ("int8", "eager"),
    ]
