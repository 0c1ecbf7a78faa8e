"""The routes chosen per machine: timed once per shape, the fastest kept and read back, with
injected timings (no test depends on this machine's speed)."""

import json
import logging
from typing import Dict, List, Tuple

import pytest
import torch

from elmo_bilm.model import int8, routes
from elmo_bilm.model.routes import RouteTable

# large enough to be timed (`MIN_TIMED_BYTES`): 4 bytes x 512 x 1024 = 2 MiB
IN, OUT = 512, 1024


class Timer:
    """Injected timings: seconds per route, and every call recorded."""

    def __init__(self, seconds: Dict[str, float]) -> None:
        self.seconds = seconds
        self.calls: List[Tuple[str, str, int, int, int]] = []

    def __call__(self, precision: str, route: str, n_in: int, n_out: int, rows: int) -> float:
        self.calls.append((precision, route, n_in, n_out, rows))
        return self.seconds[route]


def test_the_fastest_route_is_chosen_once_per_shape_and_row_bucket(tmp_path, caplog) -> None:
    timer = Timer({"onednn": 2.0, "mkl": 1.0})
    table = RouteTable(tmp_path / "routes.json", timer)
    with caplog.at_level(logging.DEBUG, logger="elmo_bilm.model.routes"):
        assert table.route("float32", IN, OUT, 30) == "mkl"
        assert table.route("float32", IN, OUT, 20) == "mkl"  # the same bucket: not timed again
    assert timer.calls == [("float32", "onednn", IN, OUT, 16), ("float32", "mkl", IN, OUT, 16)]
    announced, figures = caplog.records
    assert announced.levelno == logging.INFO and "once per product shape" in announced.message
    assert str(tmp_path / "routes.json") in announced.message
    assert figures.levelno == logging.DEBUG
    threads = torch.get_num_threads()
    assert f"float32 products 512x1024 at 16 rows, {threads} thread(s): mkl" in figures.message
    caplog.clear()
    timer.seconds = {"onednn": 1.0, "mkl": 2.0}
    with caplog.at_level(logging.INFO, logger="elmo_bilm.model.routes"):
        assert table.route("float32", IN, OUT, 200) == "onednn"  # another bucket: timed alone
    assert len(timer.calls) == 4
    assert caplog.records == []  # one line a process


def test_a_later_process_reads_the_choices_instead_of_timing(tmp_path) -> None:
    path = tmp_path / "routes.json"
    RouteTable(path, Timer({"onednn": 2.0, "mkl": 1.0})).route("float32", IN, OUT, 64)
    again = Timer({"onednn": 1.0, "mkl": 2.0})
    assert RouteTable(path, again).route("float32", IN, OUT, 64) == "mkl"
    assert again.calls == []
    stored = json.loads(path.read_text())
    assert stored["machine"] == routes.machine()
    assert stored["machine"]["torch"] == torch.__version__


def test_choices_of_another_machine_or_torch_are_timed_again(tmp_path) -> None:
    path = tmp_path / "routes.json"
    RouteTable(path, Timer({"onednn": 2.0, "mkl": 1.0})).route("float32", IN, OUT, 64)
    stored = json.loads(path.read_text())
    stored["machine"]["torch"] = "0.0.1"
    path.write_text(json.dumps(stored))
    again = Timer({"onednn": 1.0, "mkl": 2.0})
    assert RouteTable(path, again).route("float32", IN, OUT, 64) == "onednn"
    assert len(again.calls) == 2


def test_an_unwritable_cache_costs_a_timing_not_the_run(tmp_path, caplog) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    table = RouteTable(blocker / "routes" / "x.json", Timer({"onednn": 2.0, "mkl": 1.0}))
    with caplog.at_level(logging.INFO, logger="elmo_bilm.model.routes"):
        assert table.route("float32", IN, OUT, 64) == "mkl"
    assert any("were not kept" in message for message in caplog.messages)
    assert table.route("float32", IN, OUT, 64) == "mkl"  # kept in memory


def test_small_products_take_the_first_route_untimed(tmp_path) -> None:
    timer = Timer({"onednn": 2.0, "mkl": 1.0, "fbgemm": 2.0})
    table = RouteTable(tmp_path / "routes.json", timer)
    assert table.route("float32", 16, 64, 32) == routes.available("float32")[0]
    assert table.route("int8", 16, 64, 32) == "fbgemm"
    assert timer.calls == []
    assert not (tmp_path / "routes.json").exists()


def test_the_thread_count_is_part_of_the_choice(tmp_path) -> None:
    timer = Timer({"onednn": 2.0, "mkl": 1.0})
    table = RouteTable(tmp_path / "routes.json", timer)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        table.route("float32", IN, OUT, 64)
        torch.set_num_threads(2)
        table.route("float32", IN, OUT, 64)
    finally:
        torch.set_num_threads(threads)
    assert len(timer.calls) == 4


@pytest.mark.parametrize(
    "rows, bucket", [(0, 1), (1, 1), (2, 1), (3, 4), (8, 4), (9, 16), (100, 64), (5000, 256)]
)
def test_rows_are_timed_at_the_nearest_bucket(rows, bucket) -> None:
    assert routes.row_bucket(rows) == bucket


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_every_available_route_computes_the_product(precision) -> None:
    """Each route's product of the timed shapes is `x W^T` (int8: within its quantization)."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(96, 64, generator=generator) / 8
    x = torch.randn(10, 64, generator=generator)
    exact = x @ weight.T
    for route in routes.available(precision):
        got = routes.prepare(precision, route, weight, 10)(x)
        tolerance = 1e-5 if precision == "float32" else 0.05
        assert (got - exact).abs().max() <= tolerance * exact.abs().max(), route
        assert routes.time_route(precision, route, 64, 96, 4) > 0


def test_an_unknown_precision_or_route_is_refused() -> None:
    with pytest.raises(ValueError, match="bfloat16"):
        routes.available("bfloat16")
    with pytest.raises(ValueError, match="no route"):
        routes.prepare("float32", "fbgemm", torch.zeros(2, 2), 1)
    with pytest.raises(ValueError, match="no int8 route"):
        int8.pack(torch.zeros(2, 2), None, "mkl")


def test_the_biLM_gives_the_same_outputs_on_each_float32_route(monkeypatch) -> None:
    """The per-direction route of a layer on MKL's products and on oneDNN's packs: the same
    function within float32 rounding."""
    from elmo_bilm.model import onednn
    from elmo_bilm.model.lstm import ProjectedLstmStack

    torch.manual_seed(0)
    stack = ProjectedLstmStack(24, 32, 16, 2, cell_clip=3.0, proj_clip=3.0).eval()
    inputs = torch.randn(3, 7, 24)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)  # the per-direction route at this size
    outputs = {}
    for chosen in ("onednn", "mkl"):
        if chosen == "onednn" and not onednn.AVAILABLE:
            continue
        monkeypatch.setattr(routes, "route", lambda *args, chosen=chosen: chosen)
        stack._packed.clear()
        with torch.no_grad():
            outputs[chosen] = stack(inputs, mask)
    for a, b in zip(*outputs.values()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_lstm_cell_takes_the_route_chosen_for_it(monkeypatch) -> None:
    """The cell's step in the compiled loop or as eager ops, as the table says for its size."""
    from elmo_bilm.model import fused_cell, onednn
    from elmo_bilm.model.lstm import ProjectedLstmStack

    assert routes.available("cell") == (("fused", "eager") if fused_cell.built() else ("eager",))
    for route in routes.available("cell"):
        assert routes.time_route("cell", route, 32, 128, 4) > 0
    torch.manual_seed(0)
    stack = ProjectedLstmStack(24, 32, 16, 2, cell_clip=3.0, proj_clip=3.0).eval()
    inputs, mask = torch.randn(2, 5, 24), torch.ones(2, 5, dtype=torch.bool)
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)  # a per-direction route at this size
    calls = []
    compiled = fused_cell.lstm_cell
    monkeypatch.setattr(fused_cell, "lstm_cell", lambda *a: calls.append(1) or compiled(*a))
    outputs = {}
    for cell in routes.available("cell"):
        monkeypatch.setattr(
            routes, "route", lambda kind, *a, cell=cell: cell if kind == "cell" else "mkl"
        )
        calls.clear()
        with torch.no_grad():
            outputs[cell] = stack(inputs, mask)
        assert bool(calls) == (cell == "fused")
    for a, b in zip(*outputs.values()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
