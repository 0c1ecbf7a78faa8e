"""`elmo_benchmarks.processes`, the whole-process benchmarks' one runner: a chatty child does not
stall it, a failure says why, and a child's peak RSS is its own (not floored by this process's)."""

import sys
import threading

import pytest

from elmo_benchmarks.processes import measure


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


def test_a_childs_peak_is_its_own_not_the_parents() -> None:
    """Linux would give a child started from this process at least this process's peak RSS; the
    launcher in between keeps the figure the command's own."""
    import resource

    ballast = b"\x01" * (400 * 2**20)  # 400 MB touched: this process's peak is at least that
    del ballast
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _, child_mb = measure([sys.executable, "-S", "-c", "pass"])  # a bare interpreter
    assert parent_mb > 400 and child_mb < 100, (parent_mb, child_mb)
