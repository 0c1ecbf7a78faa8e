"""What a command reports as one line and what keeps its traceback; atomic single-file outputs
(`elmo_bilm.utils.files`): folders refused up front, writers coordinated by locks, not process ids."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from elmo_bilm.utils.files import FormatError, UsageError, atomic_output, reports_errors


@pytest.mark.parametrize(
    "error",
    [
        UsageError("--batch-size must be at least 1"),
        FormatError("in.txt:3: empty line"),
        FileNotFoundError("in.txt"),
    ],
)
def test_a_users_error_is_one_line_and_status_1(error):
    @reports_errors("elmo-x")
    def command():
        raise error

    with pytest.raises(SystemExit) as exit_:
        command()
    assert exit_.value.code == f"elmo-x: error: {error}"  # sys.exit(str): printed, status 1


def test_an_internal_value_error_keeps_its_traceback():
    @reports_errors("elmo-x")
    def command():
        raise ValueError("a bug: shapes (2, 3) and (4,) do not broadcast")

    with pytest.raises(ValueError, match="a bug"):
        command()


def test_user_errors_stay_value_errors_for_callers_that_catch_those():
    assert issubclass(UsageError, ValueError) and issubclass(FormatError, UsageError)


def test_an_output_that_is_a_folder_is_refused_before_the_work(tmp_path):
    """Was `IsADirectoryError: [Errno 21]` from the final rename, after the work (with
    overwrite), or "exists; not overwriting it" (without)."""
    (tmp_path / "out").mkdir()
    ran = []
    for overwrite in (False, True):
        with pytest.raises(IsADirectoryError, match="a folder; name the file"):
            with atomic_output(tmp_path / "out", overwrite):
                ran.append(True)
    assert not ran and list((tmp_path / "out").iterdir()) == []


def test_two_threads_writing_one_output_are_refused_not_collided(tmp_path):
    """The partial file was named after the process id: two threads wrote one file."""
    output = tmp_path / "out.txt"
    inside, done = threading.Event(), threading.Event()

    def first():
        with atomic_output(output) as partial:
            Path(partial).write_text("first")
            inside.set()
            done.wait(60)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(60)
        with pytest.raises(FileExistsError, match="another thread of this process"):
            with atomic_output(output):
                pass
    finally:
        done.set()
        thread.join()
    assert output.read_text() == "first" and os.listdir(tmp_path) == ["out.txt"]


def test_a_killed_writers_partial_is_removed_by_the_next(tmp_path):
    """A writer killed by SIGKILL leaves its partial file and lock; the next writer of the
    output (its lock free: no process id to check) removes them."""
    output = tmp_path / "out.txt"
    script = (
        "import os, signal\n"
        "from elmo_bilm.utils.files import atomic_output\n"
        f"with atomic_output({str(output)!r}) as partial:\n"
        "    open(partial, 'w').write('half')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, "-c", script]).returncode == -signal.SIGKILL
    assert len(os.listdir(tmp_path)) == 2  # the partial file and the lock
    with atomic_output(output) as partial:
        Path(partial).write_text("whole")
    assert os.listdir(tmp_path) == ["out.txt"] and output.read_text() == "whole"


def test_a_folder_moved_during_the_write_keeps_no_partial(tmp_path):
    """The output's folder renamed while the output is written (a user tidying up): the run
    fails, and its partial (a 145 MB one in the sweep) is removed in the moved folder, not left
    there because its old path no longer exists."""
    (tmp_path / "run").mkdir()
    with pytest.raises(FileNotFoundError):
        with atomic_output(tmp_path / "run" / "out.hdf5") as partial:
            Path(partial).write_bytes(b"x" * 1000)
            (tmp_path / "run").rename(tmp_path / "moved")
    assert not [p.name for p in (tmp_path / "moved").iterdir() if p.name.endswith(".partial")]
