"""`elmo_benchmarks.profile_stages` on the tiny fixture biLM: every stage is seen and the shares add up
(issue 70 item 1). No timing is asserted: the machine is shared."""

import pytest

from elmo_benchmarks import profile_stages
from elmo_benchmarks.common import conll_dev_sentences
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def test_shares_cover_the_forward(capsys: pytest.CaptureFixture) -> None:
    result = profile_stages.main(
        [
            "--options-file",
            str(OPTIONS_FILE),
            "--weight-file",
            str(WEIGHT_FILE),
            "--sentences",
            "3",
            "--threads",
            "1",
        ]
    )
    (run,) = result["runs"]
    shares = run["shares"]
    assert list(shares) == [name for name, _ in profile_stages.STAGES]
    assert all(0.0 <= share <= 1.0 for share in shares.values())
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-6)
    # every stage of the tiny biLM's forward was reached by its wrapper (none stayed at zero)
    seen = [name for name, share in shares.items() if share > 0]
    assert seen == list(shares)
    assert run["step_products_by_rows"]["1-8"]["calls"] > 0
    assert 0.0 < run["fraction_of_matmul_peak"] < 1.0
    assert result["tokens"] == sum(len(s) for s in conll_dev_sentences(3))
    out = capsys.readouterr().out
    assert "| step: gates + cell clip |" in out


def test_a_reduced_precision_is_profiled_in_the_same_stages(monkeypatch) -> None:
    """int8 (fbgemm, every x86 CPU) through the same wrappers: its products are timed as products,
    and the FLOPs stay the float32 pass's count."""
    from elmo_bilm.model import int8

    argv = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    argv += ["--sentences", "3", "--threads", "1"]
    float32 = profile_stages.main(argv)
    int8_products = []
    int8_linear = int8.linear
    monkeypatch.setattr(
        int8,
        "linear",
        lambda x, packed: int8_products.append(1) or int8_linear(x, packed),
    )
    result = profile_stages.main(argv + ["--precision", "int8"])
    assert int8_products  # the passes ran the int8 products
    assert result["precision"] == "int8"
    (run,) = result["runs"]
    assert [name for name, share in run["shares"].items() if share > 0] == list(run["shares"])
    assert sum(run["shares"].values()) == pytest.approx(1.0, abs=1e-6)
    flops = [r["plugin_gflops_per_s"] * r["forward_s"] for r in (float32["runs"][0], run)]
    assert flops[1] == pytest.approx(flops[0], rel=1e-9)


def test_the_wrappers_are_removed_after_the_pass() -> None:
    """The stages are timed from the outside, for the instrumented pass only."""
    import torch

    from elmo_bilm.model import lstm

    originals = (lstm.lstm_cell, torch.Tensor.clamp, lstm.ProjectedLstmStack._input_products)
    with profile_stages.instrumented(profile_stages.StageTimer()):
        assert lstm.lstm_cell is not originals[0]
    assert (lstm.lstm_cell, torch.Tensor.clamp, lstm.ProjectedLstmStack._input_products) == (
        originals
    )


def test_both_weight_options_are_needed() -> None:
    with pytest.raises(SystemExit):
        profile_stages.main(["--options-file", str(OPTIONS_FILE)])
