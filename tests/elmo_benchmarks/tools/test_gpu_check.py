"""`make gpu-check`'s script, run with `--device cpu` (CI has no GPU): every check passes."""

import subprocess
import sys

import pytest

from elmo_benchmarks.tools.gpu_check import CHECKS

pytestmark = pytest.mark.slow  # a subprocess running every check


def test_gpu_check_passes_on_cpu(repo_root):
    result = subprocess.run(
        [sys.executable, "-m", "elmo_benchmarks.tools.gpu_check", "--device", "cpu"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    rows = [
        line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line
    ]
    assert [row.split(" | ")[0][2:] for row in rows[1:]] == list(CHECKS)
    assert all(row.split(" | ")[1] == "ok" for row in rows[1:])
