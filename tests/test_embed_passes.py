"""`benchmarks.embed_passes` on the tiny random biLM: it loads, runs its passes at each thread
count and says which `elmo_bilm` it timed. No timing is asserted: the machine is shared."""

import torch

import elmo_bilm
from benchmarks import common, embed_passes


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
