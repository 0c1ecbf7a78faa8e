"""Writers of file sets coordinate by locks, not process ids, and a set appears whole or not at
all wherever its files go (project issue 88, items 2 and 3): a writer killed by SIGKILL at
every step of the swap, into one folder, two folders, or a folder named through a link, is
undone by the next writer; two threads of one process are refused, not collided; a leftover
named with this process's own id (PID 1 in a container) or left by another user does not block.
Every file is written into the test's tmp_path."""

import os
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Dict, List

import pytest

from elmo_bilm.utils import file_sets

OLD = {"options.json": b"old options", "weights.hdf5": b"old weights"}
NEW = {"options.json": b"new options", "weights.hdf5": b"new weights"}

# a writer that SIGKILLs itself before its KILL-th rename, mkdir or rmtree of the swap and its
# clean-up (never, if more)
_WRITER = """
import os, shutil, signal, sys
from elmo_bilm.utils import file_sets
kill, paths = int(sys.argv[1]), dict(zip(("options", "weights"), sys.argv[2:]))
steps = [0]
def killing(real):
    def step(*args, **kwargs):
        if steps[0] == kill:
            os.kill(os.getpid(), signal.SIGKILL)
        steps[0] += 1
        return real(*args, **kwargs)
    return step
with file_sets.output_set(paths, overwrite=True) as staged:
    for kind, path in staged.items():
        with open(path, "wb") as handle:
            handle.write(b"new " + kind.encode())
    os.replace, os.mkdir = killing(os.replace), killing(os.mkdir)
    shutil.rmtree = killing(shutil.rmtree)  # the clean-up, once the set is committed
"""


def _write(folder: Path, contents: Dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        (folder / name).write_bytes(data)


def _contents(*folders: Path) -> Dict[str, bytes]:
    """The files in `folders`, hidden ones (staging folders, locks) left out."""
    return {
        path.name: path.read_bytes()
        for folder in folders
        for path in folder.iterdir()
        if not path.name.startswith(".")
    }


def _killed_at_each_step(paths: List[Path], folders: List[Path], recover) -> List[str]:
    """Run `_WRITER` killed before each step of its swap in turn (the old set written first),
    `recover()` after each; returns, per step, which set the folders then hold."""
    held = []
    for kill in range(20):
        for folder in folders:
            folder.mkdir(exist_ok=True)
            for path in folder.iterdir():
                path.unlink()  # the old set's files: nothing else is left (see below)
        _write(paths[0].parent, {"options.json": OLD["options.json"]})
        _write(paths[1].parent, {"weights.hdf5": OLD["weights.hdf5"]})
        child = subprocess.run([sys.executable, "-c", _WRITER, str(kill), *map(str, paths)])
        recover()
        contents = _contents(*folders)
        held.append("old" if contents == OLD else "new" if contents == NEW else repr(contents))
        for folder in folders:  # and the next writer into each folder finds nothing left
            file_sets.sweep(folder)
            assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []
        if child.returncode == 0:
            return held
        assert child.returncode == -signal.SIGKILL
    raise AssertionError("the writer never finished")


def test_a_writer_killed_at_any_step_of_the_swap_leaves_one_whole_set(tmp_path):
    out = tmp_path / "out"
    held = _killed_at_each_step(
        [out / "options.json", out / "weights.hdf5"], [out], lambda: file_sets.sweep(out)
    )
    # mkdir old, two renames aside, two in, the commit mark: old; killed after it, or done: new
    assert held == ["old"] * 6 + ["new"] * 2, held


@pytest.mark.parametrize("next_writer", ["options' folder", "weights' folder"])
def test_a_set_across_two_folders_killed_at_any_step_is_undone_whole(tmp_path, next_writer):
    """Issue 88 (WRONG): an export into two folders killed after both moves left the old
    options beside the new weights (each folder had its own commit mark). The set has one
    commit point, and the next writer into either folder undoes it in both."""
    a, b = tmp_path / "a", tmp_path / "b"
    folder = a if next_writer == "options' folder" else b
    held = _killed_at_each_step(
        [a / "options.json", b / "weights.hdf5"], [a, b], lambda: file_sets.sweep(folder)
    )
    # two mkdir old, four renames, the one commit mark: old; after it (two clean-ups): new
    assert held == ["old"] * 7 + ["new"] * 3, held


def test_a_set_written_through_a_link_is_undone_by_the_folders_real_path(tmp_path):
    """Issue 88 (LOSS): `elmo-convert ... link/out --overwrite` interrupted, the next writer
    naming the folder by its real path lost the old pair (the record held the link's path)."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    through = tmp_path / "link"
    held = _killed_at_each_step(
        [through / "options.json", through / "weights.hdf5"],
        [real],
        lambda: file_sets.sweep(real),
    )
    assert held == ["old"] * 6 + ["new"] * 2, held


def test_two_threads_writing_into_one_folder_are_refused_not_collided(tmp_path):
    """Two threads of one process exporting into one folder collided on one staging folder
    named after the process id; the second is now refused in one line while the first writes,
    and the first's set appears whole."""
    out = tmp_path / "out"
    _write(out, OLD)
    inside, done = threading.Event(), threading.Event()
    errors: List[BaseException] = []

    def first() -> None:
        try:
            paths = {"options": out / "options.json", "weights": out / "weights.hdf5"}
            with file_sets.output_set(paths, overwrite=True) as staged:
                Path(staged["options"]).write_bytes(NEW["options.json"])
                Path(staged["weights"]).write_bytes(NEW["weights.hdf5"])
                inside.set()
                assert done.wait(60)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(60)
        with pytest.raises(FileExistsError) as refused:
            with file_sets.output_set({"options": out / "options.json"}, overwrite=True):
                pass
        message = str(refused.value)
        assert "another thread of this process" in message and "\n" not in message
    finally:
        done.set()
        thread.join()
    assert not errors and _contents(out) == NEW


def test_a_long_output_name_is_written(tmp_path):
    """The staged files' names are short whatever the outputs' (255 bytes on ext4)."""
    paths = {"a": tmp_path / ("a" * 250 + ".json"), "b": tmp_path / ("b" * 249 + ".hdf5")}
    with file_sets.output_set(paths) as staged:
        for kind, path in staged.items():
            Path(path).write_text(kind)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())


def test_a_name_too_long_is_refused_before_the_work(tmp_path):
    ran = []
    with pytest.raises(Exception, match="the name is 260 bytes") as refused:
        with file_sets.output_set({"a": tmp_path / ("a" * 260)}):
            ran.append(True)
    assert not ran and "\n" not in str(refused.value)


def test_a_dangling_link_as_output_is_refused_before_the_work(tmp_path):
    """It was refused only after the work ("appeared while this process wrote it")."""
    (tmp_path / "weights.hdf5").symlink_to(tmp_path / "nowhere")
    ran = []
    with pytest.raises(FileExistsError, match="a link to nowhere"):
        with file_sets.output_set({"weights": tmp_path / "weights.hdf5"}):
            ran.append(True)
    assert not ran


@pytest.mark.skipif(getattr(os, "getuid", lambda: -1)() != 0, reason="needs root to be two users")
def test_a_leftover_of_roots_writer_does_not_block_another_user(tmp_path):
    """A leftover staging folder and lock file of root's writer (its process id in the name, of
    a live process) made another user's writer refuse, naming a process it cannot see. The
    other user's writer now goes ahead: the leftover is not its to act on, and a lock no live
    writer holds is free."""
    nobody = 65534
    out = tmp_path / "out"
    _write(out, OLD)
    staging = out / f"{file_sets.STAGING_PREFIX}{os.getpid()}{file_sets.STAGING_SUFFIX}"
    (staging / "old").mkdir(parents=True)
    (out / file_sets.LOCK).write_text("1\n")  # root's, 0644
    os.chown(out, nobody, nobody)
    for path in out.iterdir():
        if path.is_file():
            os.chown(path, nobody, nobody)
    # the other user may pass through the test's folders (pytest makes them root's alone)
    # (every folder above it that others may not pass: one level more under pytest-xdist)
    above = [path for path in (tmp_path, *tmp_path.parents) if not path.stat().st_mode & 0o001]
    modes = [path.stat().st_mode for path in above]
    for path, mode in zip(above, modes):
        path.chmod(mode | 0o001)
    try:
        pid = os.fork()
        if pid == 0:  # the other user
            status = 1
            try:
                os.setgid(nobody)
                os.setuid(nobody)
                paths = {"options": out / "options.json", "weights": out / "weights.hdf5"}
                with file_sets.output_set(paths, overwrite=True) as staged:
                    for name, path in zip(("options.json", "weights.hdf5"), staged.values()):
                        Path(path).write_bytes(NEW[name])
                status = 0
            except BaseException:  # noqa: BLE001 - shown in the test's output
                traceback.print_exc()
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
    finally:
        for path, mode in zip(above, modes):
            path.chmod(mode)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _contents(out) == NEW


@pytest.mark.parametrize("planted", ["a link", "a FIFO"])
def test_a_planted_lock_is_one_line_and_followed_nowhere(tmp_path, planted):
    """A lock file that is a link (to a file elsewhere) or a FIFO: one line naming it; the link's
    target is not opened, created or written."""
    out = tmp_path / "out"
    _write(out, OLD)
    target = tmp_path / "target"
    if planted == "a link":
        (out / file_sets.LOCK).symlink_to(target)
    else:
        os.mkfifo(out / file_sets.LOCK)
    with pytest.raises(Exception, match="remove it") as refused:
        with file_sets.output_set({"options": out / "options.json"}, overwrite=True):
            pass
    assert str(out / file_sets.LOCK) in str(refused.value) and "\n" not in str(refused.value)
    assert not target.exists() and _contents(out) == OLD


def test_a_new_folder_appears_by_one_rename_with_the_whole_set(tmp_path):
    """A set whose folder is new is written in a hidden folder beside it that becomes the
    folder by one rename: while it is written, and after a failure, the folder is not there."""
    out = tmp_path / "out"
    paths = {"options": out / "options.json", "weights": out / "weights.hdf5"}
    with pytest.raises(KeyboardInterrupt):
        with file_sets.output_set(paths) as staged:
            Path(staged["options"]).write_bytes(NEW["options.json"])
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with file_sets.output_set(paths) as staged:
        for kind, name in (("options", "options.json"), ("weights", "weights.hdf5")):
            Path(staged[kind]).write_bytes(NEW[name])
            assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and _contents(out) == NEW
    assert sorted(p.name for p in out.iterdir()) == sorted(NEW)


def test_a_new_folder_killed_while_written_is_removed_by_the_next_writer(tmp_path):
    out = tmp_path / "out"
    assert subprocess.run([sys.executable, "-c", _WRITER, "0", str(out / "o"), str(out / "w")])
    (leftover,) = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    with file_sets.output_set({"options": out / "options.json"}) as staged:
        Path(staged["options"]).write_bytes(b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and not leftover.exists()


def test_an_empty_set_writes_and_locks_nothing(tmp_path, monkeypatch):
    """A caller with no outputs (a run that keeps none of its files): the block runs, nothing is
    staged or left behind (an IndexError on the way out before)."""
    monkeypatch.chdir(tmp_path)
    with file_sets.output_set({}) as staged:
        assert staged == {}
    assert list(tmp_path.iterdir()) == []
