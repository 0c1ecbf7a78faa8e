"""The GPU bfloat16 inference benchmark (`elmo_benchmarks.gpu_inference`), exercised on the CPU at a
tiny size (CI has no GPU): pack, then both precisions over the packed sentences."""

import json
import warnings

import pytest

from elmo_benchmarks import gpu_inference
from elmo_benchmarks.common import CONFIGS


@pytest.mark.slow
def test_pack_then_run_times_both_precisions_and_measures_the_error(tmp_path, capsys):
    packed = tmp_path / "inference.json"
    gpu_inference.main(["pack", "--out", str(packed)])
    data = json.loads(packed.read_text())
    assert data["options"] == CONFIGS["paper"] and len(data["sentences"]) == 3250
    data["options"] = CONFIGS["tiny"]
    data["sentences"] = [["w"] * n for n in range(1, 31)]  # lengths 1..30
    packed.write_text(json.dumps(data))
    out = tmp_path / "result.json"
    with warnings.catch_warnings():  # a CPU without bfloat16 runs float32 and says so
        warnings.simplefilter("ignore")
        rows = gpu_inference.main(
            ["run", "--data", str(packed), "--device", "cpu", "--batch-sizes", "16", "64"]
            + ["--passes", "1", "--sentences", "40", "--repeat", "2", "--out", str(out)]
        )
    assert [(r["batch_sentences"], r["precision"]) for r in rows] == [
        (16, "float32"), (16, "bfloat16"), (64, "float32"), (64, "bfloat16")
    ]  # fmt: skip
    # --repeat 2 then the 40 shortest: lengths 1..20 twice (without the repeat: 1..30 once)
    assert all(r["tokens"] == 2 * sum(range(1, 21)) and r["tokens_per_s"] > 0 for r in rows)
    errors = rows[1]["errors"]
    assert [e["layer"] for e in errors] == [0, 1, 2]
    # bfloat16 products (8-bit mantissa) keep directions; float32 on a CPU without bf16: exact
    assert all(0.999 < e["min_cosine"] <= 1.0 + 1e-6 for e in errors)
    assert json.loads(out.read_text())["rows"] == rows
    assert "| 64 | bfloat16 |" in capsys.readouterr().out
