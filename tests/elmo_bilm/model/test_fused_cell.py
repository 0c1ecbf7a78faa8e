import ctypes
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from elmo_bilm.model import fused_cell, lstm, onednn
from tests.elmo_bilm.model.test_lstm import make_stack
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close

pytestmark = pytest.mark.numerics  # the AVX2 pass builds and checks the AVX2 loop

needs_kernel = pytest.mark.skipif(
    platform.system() != "Linux"
    or platform.machine() != "x86_64"
    or fused_cell._compiler() is None
    or torch.backends.cpu.get_cpu_capability() not in fused_cell._ARCH_FLAGS,
    reason="the fused cell is built with a C compiler and glibc on x86-64 Linux",
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test builds into a cache of its own, from a clean slate of loaded libraries."""
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fused_cell, "_loaded", {})
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    return tmp_path / "cache" / "kernels"


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
def test_the_library_is_compiled_once_and_then_loaded_from_the_cache(own_cache, monkeypatch):
    gates, c = gates_and_cell(4, 16, seed=2)
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None
    built = list(own_cache.iterdir())
    assert len(built) == 1 and built[0].suffix == ".so"  # no partial file left behind
    monkeypatch.setattr(fused_cell, "_loaded", {})

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(fused_cell, "_compile", no_compiler)
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None


@needs_kernel
def test_a_library_others_may_write_is_not_loaded(own_cache, monkeypatch):
    gates, c = gates_and_cell(4, 16, seed=6)
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None
    (library,) = own_cache.iterdir()
    assert own_cache.stat().st_mode & 0o077 == 0 and library.stat().st_mode & 0o077 == 0
    for path, mode in ((library, 0o775), (own_cache, 0o757)):  # group- or world-writable
        path.chmod(mode)
        monkeypatch.setattr(fused_cell, "_loaded", {})  # a later process
        assert fused_cell.lstm_cell(gates, c, 3.0) is None
        path.chmod(0o700)
    monkeypatch.setattr(fused_cell, "_loaded", {})
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None


def test_without_a_compiler_the_eager_ops_run(own_cache, monkeypatch):
    monkeypatch.setenv("CC", "elmo-no-such-compiler")
    gates, c = gates_and_cell(4, 16, seed=3)
    assert fused_cell.lstm_cell(gates, c, 3.0) is None
    expected = lstm.lstm_cell(gates, c, 3.0)
    for actual, wanted in zip(lstm.lstm_cell(gates, c, 3.0, fused=True), expected):
        assert torch.equal(actual, wanted)
    assert not own_cache.exists()


@needs_kernel
def test_a_failing_compiler_is_tried_once_and_the_eager_ops_run(own_cache, monkeypatch):
    monkeypatch.setenv("CC", "false")  # exits 1, like a compiler refusing the source
    gates, c = gates_and_cell(4, 16, seed=4)
    assert fused_cell.lstm_cell(gates, c, 3.0) is None
    (failed,) = own_cache.iterdir()  # no library, no partial file: the refusal is noted
    assert failed.name.endswith(".so.failed") and failed.read_text().startswith("false ")
    monkeypatch.setattr(fused_cell, "_loaded", {})  # a later process

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(fused_cell, "_compile", no_compiler)
    assert fused_cell.lstm_cell(gates, c, 3.0) is None
    failed.unlink()  # deleting the note tries again
    monkeypatch.setattr(fused_cell, "_loaded", {})
    with pytest.raises(AssertionError, match="compiled again"):
        fused_cell.lstm_cell(gates, c, 3.0)


@needs_kernel
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


# --- issue 79: the library opened once and verified; a compiler that never returns ------------

PLANTED = """
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    int fd = open(MARKER, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0) close(fd);
}
"""


def _planted_library(tmp_path: Path) -> Path:
    """A library "another user" put in the cache: loading it runs its constructor, which
    creates `tmp_path/constructor-ran`."""
    source = tmp_path / "planted.c"
    source.write_text(PLANTED)
    library = tmp_path / "planted.so"
    marker = tmp_path / "constructor-ran"
    subprocess.run(
        [*fused_cell._compiler(), "-shared", "-fPIC", f'-DMARKER="{marker}"', str(source)]
        + ["-o", str(library)],
        check=True,
        timeout=120,
    )
    return library


def _built(own_cache: Path) -> Path:
    """The kernel, built into the test's cache: its path."""
    gates, c = gates_and_cell(4, 16, seed=8)
    assert fused_cell.lstm_cell(gates, c, 3.0) is not None
    (library,) = own_cache.iterdir()
    return library


@needs_kernel
@pytest.mark.parametrize("plant", ["group-writable", "world-writable", "a link", "another owner"])
def test_a_planted_library_whose_checks_fail_is_never_loaded(
    own_cache, tmp_path, monkeypatch, plant
):
    library = _built(own_cache)
    planted = _planted_library(tmp_path)
    if plant == "a link":  # a private library, reached through a link: the path is not trusted
        library.unlink()
        library.symlink_to(planted)
    else:
        os.replace(planted, library)
        if plant == "another owner":
            if os.getuid() != 0:
                pytest.skip("giving a file to another user takes root")
            os.chown(library, 4242, 4242)
        else:
            library.chmod(0o770 if plant == "group-writable" else 0o707)
    monkeypatch.setattr(fused_cell, "_loaded", {})  # a later process
    gates, c = gates_and_cell(4, 16, seed=9)
    assert fused_cell.lstm_cell(gates, c, 3.0) is None  # the eager ops
    assert not (tmp_path / "constructor-ran").exists()


@needs_kernel
def test_a_library_swapped_in_after_the_check_is_not_what_is_loaded(
    own_cache, tmp_path, monkeypatch
):
    """The check passes on the kernel; just before loading, "another user" renames their
    library over it. What is loaded is the file that was checked, not what the path now names."""
    built = _built(own_cache)
    # the kernel as a later process finds it: a copy this process has not loaded (glibc would
    # hand back a library it loaded before under the same path, whatever the file is now)
    cache = tmp_path / "later"
    shutil.copytree(own_cache, cache / "kernels")
    monkeypatch.setenv("ELMO_BILM_CACHE", str(cache))
    library = cache / "kernels" / built.name
    planted = _planted_library(tmp_path)
    planted.chmod(0o700)
    real = ctypes.CDLL
    swapped = []

    def swap_then_load(name, *args, **kwargs):
        if not swapped:
            os.replace(planted, library)  # between the check and the load
            swapped.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(ctypes, "CDLL", swap_then_load)
    monkeypatch.setattr(fused_cell, "_loaded", {})
    gates, c = gates_and_cell(4, 16, seed=10)
    fused = fused_cell.lstm_cell(gates, c, 3.0)
    assert swapped and not (tmp_path / "constructor-ran").exists()
    assert fused is not None  # the checked kernel, loaded and computing
    for actual, wanted in zip(fused, lstm.lstm_cell(gates, c, 3.0)):
        assert_float32_close(actual, wanted, ONE_REDUCTION)


HANGING_COMPILER = """#!/bin/sh
# a compiler that never returns, its child (as cc's cc1 would) holding the output pipes
sleep 3600
"""


@needs_kernel
def test_a_compiler_that_never_returns_is_killed_and_the_eager_ops_run(
    own_cache, tmp_path, monkeypatch
):
    compiler = tmp_path / "hanging-cc"
    compiler.write_text(HANGING_COMPILER)
    compiler.chmod(0o700)
    monkeypatch.setenv("CC", str(compiler))
    monkeypatch.setattr(fused_cell, "COMPILE_TIMEOUT", 0.5)
    gates, c = gates_and_cell(4, 16, seed=11)
    assert fused_cell.lstm_cell(gates, c, 3.0) is None
    (failed,) = own_cache.iterdir()  # no partial left: the hang is noted, not retried each time
    assert failed.name.endswith(".so.failed") and "timed out after 0.5 s" in failed.read_text()
    monkeypatch.setattr(fused_cell, "_loaded", {})
    assert fused_cell.lstm_cell(gates, c, 3.0) is None


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@needs_kernel
def test_partials_of_dead_compilers_are_swept_at_the_next_build(own_cache, monkeypatch):
    own_cache.mkdir(parents=True)
    name = "fused_cell-avx2-0123456789abcdef.so"
    dead = own_cache / f"{name}.{_dead_pid()}.k3x_9q.partial"
    live = own_cache / f"{name}.{os.getppid()}.k3x_9r.partial"  # a live compiler's: kept
    for partial in (dead, live):
        partial.write_bytes(b"half a library")
    assert fused_cell.lstm_cell(*gates_and_cell(4, 16, seed=12), 3.0) is not None
    names = sorted(path.name for path in own_cache.iterdir())
    assert dead.name not in names and live.name in names
