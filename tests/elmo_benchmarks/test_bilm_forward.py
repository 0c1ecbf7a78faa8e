"""`make bench`'s biLM line: each lower precision's pass and its fraction of the machine's own
product rate in that precision (issue 92 item 2), on the fixture biLM."""

import pytest
import torch

from elmo_benchmarks import bilm_forward
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.runtime.precision import missing_bfloat16_instructions
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def test_each_native_precision_is_timed_against_its_own_product_rate(monkeypatch) -> None:
    bilm = load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()
    batches = [batch_char_ids([["a", "cat", "sat"], ["on", "the", "mat", "."]])]
    monkeypatch.setattr(bilm_forward, "matmul_peak", lambda *args, **kwargs: 1e9)  # small work
    monkeypatch.setattr(bilm_forward.routes, "time_route", lambda *args: 1.0)
    figures = bilm_forward.precision_figures(bilm, batches, flops=2e6)
    expected = ["int8"] if missing_bfloat16_instructions() else ["bfloat16", "int8"]
    assert sorted(figures) == expected
    for record in figures.values():
        assert record["tokens_per_s"] > 0
        assert record["fraction_of_matmul_peak"] == pytest.approx(
            record["gflops_per_s"] / record["matmul_gflops_per_s"]
        )
    assert figures["int8"]["matmul_gflops_per_s"] == pytest.approx(2 * 2048**3 / 1e9)
    assert bilm.lstm.products is None  # left in float32
    assert isinstance(bilm(batches[0])["activations"][0], torch.Tensor)
