"""`elmo_benchmarks.fused_cell` on a tiny cell: one record per gates dtype and row count, each
timing the eager ops at every thread count asked and the compiled loop where it builds. No
timing is asserted: the machine is shared."""

import torch

from elmo_benchmarks import fused_cell as benchmark
from elmo_bilm.model import fused_cell


def test_records_per_dtype_and_rows():
    threads = torch.get_num_threads()
    argv = ["--rows", "2", "5", "--threads", "1", "2", "--dim", "24", "--number", "2"]
    records = benchmark.main(argv + ["--repeats", "1"])
    assert torch.get_num_threads() == threads  # restored
    assert [(r["gates"], r["rows"]) for r in records] == [
        ("float32", 2),
        ("float32", 5),
        ("bfloat16", 2),
        ("bfloat16", 5),
    ]
    built = fused_cell._library() is not None
    for record in records:
        assert {"eager_1_threads_ms", "eager_2_threads_ms"} <= set(record)  # no timing asserted
        assert (record["fused_ms"] is not None) == built
