"""The task configs' GPU benchmark, exercised on the CPU (CI has no GPU): the configs as shipped
train a few batches of their slice through the benchmark's overrides, with the fixture biLM."""

import math

import pytest

from elmo_benchmarks import gpu_tasks


@pytest.mark.slow
def test_each_task_config_trains_the_asked_batches_and_reports_them(capsys):
    rows = gpu_tasks.main(["--device", "cpu", "--tasks", "sst", "ner", "--batches", "3"])
    assert [r["task"] for r in rows] == ["sst", "ner"]
    for row in rows:
        assert row["device"] == "cpu" and row["batches"] == 3
        assert row["median_batch_s"] > 0 and row["peak_gpu_mb"] == 0.0
        assert math.isfinite(row["loss_first_fifth"]) and math.isfinite(row["loss_last_fifth"])
    table = capsys.readouterr().out
    assert "sst" in table.split("loss end")[1] and "ner" in table.split("loss end")[1]
