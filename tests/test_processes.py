"""`benchmarks.processes`, the whole-process benchmarks' one runner: a chatty child does not
stall it, a failure says why, and the parents whose children's memory is measured import no torch
(a parent's own peak RSS would be a floor under every child's `ru_maxrss`)."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmarks.processes import measure

ROOT = Path(__file__).resolve().parents[1]


def test_a_child_writing_megabytes_to_stderr_is_measured_to_its_end() -> None:
    # 4 MB of progress-bar-like output: a stderr pipe read only at the end holds 64 KB, so a
    # runner using one would wait for ever; the thread keeps a broken runner from hanging the suite
    child = "import sys\nfor _ in range(40000): sys.stderr.write('x' * 99 + '\\r')\n"
    results = []
    runner = threading.Thread(
        target=lambda: results.append(measure([sys.executable, "-c", child])), daemon=True
    )
    runner.start()
    runner.join(timeout=600)
    assert results, "the runner stalled on the child's stderr"
    ((seconds, peak_mb),) = results
    assert seconds > 0 and peak_mb > 0


def test_a_failing_child_is_named_with_the_end_of_its_stderr() -> None:
    child = "import sys\nsys.stderr.write('a' * 5000 + 'the reason')\nsys.exit(3)\n"
    with pytest.raises(RuntimeError) as error:
        measure([sys.executable, "-c", child])
    message = str(error.value)
    assert message.endswith("the reason") and sys.executable in message
    assert len(message) < 2500  # the end of it, not all of it


@pytest.mark.parametrize(
    "module", ["benchmarks.processes", "benchmarks.embed_memory", "benchmarks.protein_memory"]
)
def test_the_memory_benchmarks_parents_import_no_torch(module: str) -> None:
    code = f"import sys, {module}; assert 'torch' not in sys.modules, sorted(sys.modules)[:5]"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
