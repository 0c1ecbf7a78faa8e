"""Hostile and careless inputs to the kernels' new surfaces (issue 92's sweep): the routes'
choices file and cache, int8's two libraries, the weights' fingerprint. One test per finding, each
failing on the code the sweep found."""

import json
import logging

import pytest
import torch

from elmo_bilm.model import int8, routes
from elmo_bilm.model.routes import RouteTable
from tests.elmo_bilm.model.test_routes import IN, OUT, Timer


def _with_machine(choices: object) -> str:
    return json.dumps({"machine": routes.machine(), "choices": choices})


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{not json",
        '{"machine": 1}',
        '{"choices": 3}',
        "null",
        "[]",
        "[1, 2]",
        "42",
        '"a string"',
        "[" * 100_000 + "]" * 100_000,  # deeper than json's recursion limit
        b"\xff\xfe".decode("latin-1"),
        _with_machine({"a": 1}),
        _with_machine([{"key": ["float32", "512", "1024", "64", "1"], "route": "onednn"}]),
        _with_machine([{"key": ["float32", None, 1024, 64, 1], "route": "onednn"}]),
        _with_machine([{"key": "float32", "route": "onednn"}]),
        _with_machine([{"key": [[1]], "route": "onednn"}, 7, None]),
        _with_machine([{"key": ["float32", 512, 1024, 64, 1], "route": ["mkl"]}]),
    ],
)
def test_a_broken_choices_file_is_timed_again_and_rewritten(tmp_path, content) -> None:
    path = tmp_path / "routes.json"
    path.write_text(content)
    timer = Timer({"onednn": 2.0, "mkl": 1.0})
    assert RouteTable(path, timer).route("float32", IN, OUT, 64) == "mkl"
    assert json.loads(path.read_text())["choices"][0]["route"] == "mkl"


@pytest.mark.skipif(not int8.ONEDNN, reason="oneDNN's int8 route needs VNNI or AMX")
def test_onednn_and_fbgemm_compute_the_same_int8_products() -> None:
    """Both quantize the input with the same scale and zero point and the weight per channel: the
    same integers, so the results differ only in the float32 rounding of the rescaling."""
    generator = torch.Generator().manual_seed(1)
    # 1,024 inputs: where weights near a rounding midpoint met two roundings (a sweep found
    # thousands of ulps between the routes: each quantized the weights its own way)
    weight = torch.randn(300, 1024, generator=generator) / 11
    bias = torch.randn(300, generator=generator)
    for rows in (1, 7, 64):
        x = torch.randn(rows, 1024, generator=generator) * 3
        fbgemm = int8.linear(x, int8.pack(weight, bias, "fbgemm"))
        onednn = int8.linear(x, int8.pack(weight, bias, "onednn", rows))
        scale = fbgemm.abs().max()
        # float32 rescaling of int32 sums: a few ulps of the largest value
        assert (fbgemm - onednn).abs().max() <= 8 * torch.finfo(torch.float32).eps * scale


def test_a_cache_that_is_a_file_times_in_the_process_alone(tmp_path, monkeypatch, caplog) -> None:
    """`$ELMO_BILM_CACHE` naming a file: the run goes on, its choices kept in memory (found by a
    sweep: the first timed product failed the run)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ELMO_BILM_CACHE", str(blocker))
    monkeypatch.setattr(routes, "_tables", {})
    with caplog.at_level(logging.INFO, logger="elmo_bilm.model.routes"):
        assert routes.route("float32", IN, OUT, 64) in routes.available("float32")
    assert routes.default_table().path is None
    assert any("not kept" in message and str(blocker) in message for message in caplog.messages)


def test_two_processes_keep_each_others_choices(tmp_path) -> None:
    """Each save merges what the file holds under its lock: a table that read the file before
    another one saved does not drop that one's choices (found by a sweep: the last writer won)."""
    path = tmp_path / "routes.json"
    first = RouteTable(path, Timer({"onednn": 2.0, "mkl": 1.0}))
    second = RouteTable(path, Timer({"onednn": 1.0, "mkl": 2.0}))
    second.route("float32", IN, 2 * OUT, 64)  # read the (missing) file, then saved
    first.route("float32", IN, OUT, 64)  # saves after the second
    third = Timer({"onednn": 3.0, "mkl": 3.0})
    table = RouteTable(path, third)
    assert table.route("float32", IN, OUT, 64) == "mkl"
    assert table.route("float32", IN, 2 * OUT, 64) == "onednn"
    assert third.calls == []


def test_a_save_that_meets_another_processs_is_left_to_the_next(tmp_path, monkeypatch) -> None:
    """Another process holding the file's lock: this save is skipped, later ones still keep
    (found by a sweep: the table stopped keeping anything for the rest of the process)."""
    path = tmp_path / "routes.json"
    table = RouteTable(path, Timer({"onednn": 2.0, "mkl": 1.0}))

    def held(*args, **kwargs):
        raise FileExistsError(f"{path} is being written by process 1")

    with monkeypatch.context() as patch:
        patch.setattr(routes, "atomic_output", held)
        table.route("float32", IN, OUT, 64)
    assert table.path == path and not path.exists()
    table.route("float32", IN, 2 * OUT, 64)
    assert len(json.loads(path.read_text())["choices"]) == 2


@pytest.mark.parametrize("route", int8.ROUTES)
def test_int8_products_of_no_rows_and_of_non_finite_inputs(route) -> None:
    """No rows: an empty product (oneDNN's quantizer failed on one). A NaN or infinity: one
    line, not every row of the batch non-finite or torch's quantizer's own error."""
    if route == "onednn" and not int8.ONEDNN:
        pytest.skip("oneDNN's int8 route needs VNNI or AMX")
    weight, bias = torch.randn(48, 32), torch.randn(48)
    empty = int8.linear(torch.randn(0, 32), int8.pack(weight, bias, route, 16))
    assert empty.shape == (0, 48)
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(7, 32)
        x[3, 5] = bad
        with pytest.raises(ValueError, match="NaN or infinite"):
            int8.linear(x, int8.pack(weight, bias, route, 16))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.bool])
def test_a_tiny_tensor_off_a_word_boundary_has_a_fingerprint(dtype) -> None:
    """One or two bytes at an offset that is not a whole word: hashed, a change seen (found by
    a sweep: viewing the empty middle as words failed)."""
    from elmo_bilm.model import derived

    base = torch.zeros(8, dtype=dtype)
    for start, end in ((1, 2), (1, 3), (2, 3)):
        before = derived.fingerprint(base[start:end])
        base[start] = 1
        assert not torch.equal(before, derived.fingerprint(base[start:end]))
        base[start] = 0
