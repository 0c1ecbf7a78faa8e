import importlib.util
import logging
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from elmo_bilm.model import fused_cell, lstm, onednn
from tests.elmo_bilm.model.test_lstm import make_stack
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close

pytestmark = pytest.mark.numerics  # the AVX2 pass checks the AVX2 loop


def _built(capability: str) -> bool:
    """Whether the package was built with the loop for `capability` (`make install`)."""
    return (
        capability in fused_cell.VARIANTS
        and importlib.util.find_spec(fused_cell.VARIANTS[capability]) is not None
    )


needs_kernel = pytest.mark.skipif(
    platform.system() != "Linux"
    or platform.machine() != "x86_64"
    or not _built(torch.backends.cpu.get_cpu_capability()),
    reason="the fused cell is built by `make install` with a C compiler and glibc on x86-64 Linux",
)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Each test from a clean slate of loaded libraries, at one intra-op thread."""
    monkeypatch.setattr(fused_cell, "_loaded", {})
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)


def gates_and_cell(rows: int, dim: int, seed: int):
    """Gates spread over saturated and linear regions, cells inside and outside the clip."""
    generator = torch.Generator().manual_seed(seed)
    gates = torch.randn(rows, 4 * dim, generator=generator) * 4
    gates[0, :8] = torch.tensor([0.0, 1e-6, -1e-6, 30.0, -30.0, 88.0, -88.0, 0.5])
    c = torch.randn(rows, dim, generator=generator) * 3
    return gates, c


@needs_kernel
@pytest.mark.parametrize("gate_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("clip", [3.0, None])
def test_the_compiled_loop_computes_the_eager_cell(gate_dtype, clip):
    gates, c = gates_and_cell(37, 300, seed=1)  # 300 cells: vector lanes plus a remainder
    gates = gates.to(gate_dtype)
    fused = fused_cell.lstm_cell(gates, c, clip)
    assert fused is not None
    expected = lstm.lstm_cell(gates.float(), c, clip)
    for actual, wanted in zip(fused, expected):
        assert actual.dtype == torch.float32
        # a few ops per value (sigmoid, tanh, a product and a sum), each within a few units
        assert_float32_close(actual, wanted, ONE_REDUCTION)
    if clip is not None:
        assert fused[0].abs().max() == clip  # the clip binds on these cells
    else:
        assert fused[0].abs().max() > 3.0


@needs_kernel
@needs_kernel
def test_the_compiled_row_hashes_are_torchs_integers(monkeypatch):
    """The weights' fingerprint (`elmo_bilm.model.derived`) from the compiled loop: the same
    int64 row hashes as torch's widened matrix-vector product, extreme words included; and a
    fingerprint of a weight is the same with or without the loop."""
    from elmo_bilm.model import derived

    generator = torch.Generator().manual_seed(3)
    words = torch.randint(-(2**31), 2**31, (37, 1024), dtype=torch.int64, generator=generator)
    words[0, :4] = torch.tensor([-(2**31), 2**31 - 1, 0, -1])
    words = words.to(torch.int32)
    multipliers = derived._row_multipliers(torch.device("cpu"))
    compiled = fused_cell.row_hashes(words, multipliers)
    assert compiled is not None
    assert torch.equal(compiled, torch.mv(words.long(), multipliers))
    weight = torch.randn(300, 701, generator=generator)  # rows of 1024 words and a loose tail
    with_loop = derived.fingerprint(weight)
    monkeypatch.setattr(fused_cell, "row_hashes", lambda *args: None)
    assert torch.equal(with_loop, derived.fingerprint(weight))


def test_where_it_does_not_apply_it_says_so(monkeypatch):
    gates, c = gates_and_cell(4, 16, seed=5)
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None
    assert fused_cell.lstm_cell(gates[:, :-4], c, 3.0) is None  # not 4 dim gates
    assert fused_cell.lstm_cell(gates.t().contiguous().t(), c, 3.0) is None  # not contiguous
    assert fused_cell.lstm_cell(gates, c.bfloat16(), 3.0) is None  # a bfloat16 cell state
    assert fused_cell.lstm_cell(gates.requires_grad_(), c, 3.0) is None  # a gradient is needed
    with torch.no_grad():
        assert fused_cell.lstm_cell(gates, c, 3.0) is not None
    monkeypatch.setattr(torch, "get_num_threads", lambda: fused_cell.MAX_THREADS + 1)
    assert fused_cell.lstm_cell(gates.detach(), c, 3.0) is None


@needs_kernel
@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
def test_the_packed_route_runs_the_compiled_loop_and_gives_the_eager_outputs(monkeypatch):
    monkeypatch.setattr(onednn, "MIN_STEP_BYTES", 0)  # this small stack on the packed route
    stack = make_stack(7)
    lengths = [5, 3, 1]
    inputs = torch.randn(3, 5, 6, generator=torch.Generator().manual_seed(7))
    mask = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]
    calls = []
    compiled = fused_cell.lstm_cell

    def counted(*args):
        out = compiled(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(fused_cell, "lstm_cell", counted)
    with torch.no_grad():
        fused = stack(inputs, mask)
        assert calls and all(calls)  # every step of both layers and directions
        monkeypatch.setattr(fused_cell, "MAX_THREADS", 0)
        eager = stack(inputs, mask)
    for a, b in zip(fused, eager):
        assert_float32_close(a, b, NETWORK)
        assert a.abs().max() > 0.1


# --- issue 88: built with the package; nothing compiled or written at run time -------------

FAILING_COMPILER = """#!/bin/sh
# a compiler that notes it was asked, then refuses
touch "$(dirname "$0")/compiler-ran"
exit 1
"""


@needs_kernel
def test_nothing_is_compiled_or_written_at_run_time(tmp_path, monkeypatch):
    """No compiler on PATH, CC a failing command, a planted cache whose kernels/ is a link to
    another folder: the built loop runs, no compiler is asked, nothing appears in either folder."""
    tools = tmp_path / "tools"
    tools.mkdir()
    compiler = tools / "cc"
    compiler.write_text(FAILING_COMPILER)
    compiler.chmod(0o700)
    monkeypatch.setenv("CC", str(compiler))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "kernels").symlink_to(elsewhere, target_is_directory=True)
    cache.chmod(0o500)
    monkeypatch.setenv("ELMO_BILM_CACHE", str(cache))
    gates, c = gates_and_cell(4, 16, seed=2)
    fused = fused_cell.lstm_cell(gates, c, 3.0)
    cache.chmod(0o700)
    assert fused is not None
    for actual, wanted in zip(fused, lstm.lstm_cell(gates, c, 3.0)):
        assert_float32_close(actual, wanted, ONE_REDUCTION)
    assert not (tools / "compiler-ran").exists()
    assert [p.name for p in cache.iterdir()] == ["kernels"] and not any(elsewhere.iterdir())


def test_without_the_built_library_the_eager_ops_run(monkeypatch, caplog):
    """A package built without the loop (no compiler at install time): eager ops, said once at
    INFO."""
    capability = torch.backends.cpu.get_cpu_capability()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setitem(fused_cell.VARIANTS, "AVX2", "elmo_bilm.model._fused_cell_not_built")
    gates, c = gates_and_cell(4, 16, seed=3)
    with caplog.at_level(logging.INFO, logger=fused_cell.__name__):
        assert fused_cell.lstm_cell(gates, c, 3.0) is None
        assert fused_cell.lstm_cell(gates, c, 3.0) is None
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "not built with the package for AVX2" in caplog.records[0].getMessage()
    expected = lstm.lstm_cell(gates, c, 3.0)
    for actual, wanted in zip(lstm.lstm_cell(gates, c, 3.0, fused=True), expected):
        assert torch.equal(actual, wanted)
    assert capability  # the real capability is untouched outside this test


def test_another_instruction_set_runs_the_eager_ops(monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    assert fused_cell.lstm_cell(*gates_and_cell(4, 16, seed=4), 3.0) is None


@pytest.mark.skipif(not _built("AVX2"), reason="the AVX2 loop was not built with the package")
def test_the_loaded_variant_follows_the_capability_torch_runs_at(tmp_path):
    """`ATEN_CPU_CAPABILITY=avx2` caps PyTorch, and with it the loop loaded: the AVX2 library,
    from the package's own folder."""
    script = (
        "import torch\n"
        "from elmo_bilm.model import fused_cell\n"
        "print(torch.backends.cpu.get_cpu_capability(), fused_cell._library()._name)\n"
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    capability, library = out.stdout.split()
    assert capability == "AVX2"
    assert Path(library).parent == Path(fused_cell.__file__).parent
    assert Path(library).name.startswith("_fused_cell_avx2.")


def _shared_library() -> bytes:
    """A real shared library without the kernels: the interpreter's own `_ctypes` extension."""
    import _ctypes

    return Path(_ctypes.__file__).read_bytes()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda: b"", id="empty"),
        pytest.param(lambda: b"\x7fELF" + b"\x00" * 100, id="garbage"),
        pytest.param(lambda: _shared_library()[:4096], id="truncated"),
        pytest.param(_shared_library, id="without-the-kernels"),
    ],
)
def test_a_broken_library_in_the_package_folder_runs_the_eager_ops(
    tmp_path, monkeypatch, caplog, content
):
    """A corrupted, truncated or foreign `.so` where the package's fused cell goes (a stale or
    interrupted install): one INFO line and the eager ops, never an error at each LSTM step (a
    library without the kernels was an AttributeError)."""
    package = tmp_path / "broken_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_fused_cell_avx2.so").write_bytes(content())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setitem(fused_cell.VARIANTS, "AVX2", "broken_package._fused_cell_avx2")
    gates, c = gates_and_cell(4, 16, seed=5)
    with caplog.at_level(logging.INFO, logger=fused_cell.__name__):
        assert fused_cell.lstm_cell(gates, c, 3.0) is None
        assert fused_cell.lstm_cell(gates, c, 3.0) is None
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "not loaded" in caplog.records[0].getMessage()
    expected = lstm.lstm_cell(gates, c, 3.0)
    for actual, wanted in zip(lstm.lstm_cell(gates, c, 3.0, fused=True), expected):
        assert torch.equal(actual, wanted)
