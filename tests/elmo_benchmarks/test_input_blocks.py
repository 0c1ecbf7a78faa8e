"""`elmo_benchmarks.input_blocks` on a small product: one record per precision and block size, the
blocks covering every position. No timing is asserted: the machine is shared."""

import pytest
import torch

from elmo_benchmarks import input_blocks
from elmo_bilm.model import onednn


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
def test_records_per_precision_and_rows(monkeypatch):
    calls = []
    products = input_blocks.products

    def counted(weight):
        return {
            name: (lambda x, f=f, name=name: calls.append((name, x.shape[0])) or f(x))
            for name, f in products(weight).items()
        }

    monkeypatch.setattr(input_blocks, "products", counted)
    threads = torch.get_num_threads()
    argv = ["--rows", "4", "10", "--positions", "10", "--inputs", "8", "--gates", "16"]
    records = input_blocks.main(argv + ["--repeats", "1"])
    assert torch.get_num_threads() == threads
    assert [(r["precision"], r["rows"]) for r in records] == [
        (p, rows) for p in ("float32", "bfloat16", "int8") for rows in (4, 10)
    ]
    assert [rows for name, rows in calls if name == "int8"] == [4, 4, 2, 10]
