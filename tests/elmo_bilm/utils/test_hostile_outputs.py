"""Outputs of several files written as one (issue 79, `elmo_bilm.utils.file_sets`): a disk that
fills, a file that cannot be moved in, a writer killed midway: the old set stays whole and the
error says what happened in one line; leftovers of dead writers are undone at the next start.
Every file is written into the test's tmp_path."""

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from elmo_bilm.cli import convert as convert_cli
from elmo_bilm.cli.convert import main as elmo_convert
from elmo_bilm.formats import bilm_tf
from elmo_bilm.formats.convert import convert_checkpoint
from elmo_bilm.sources import resolver
from elmo_bilm.sources.resolver import resolve_bilm
from elmo_bilm.utils import file_sets
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

CHECKPOINT = REPO_ROOT / "fixtures" / "tf_checkpoint" / "save_dir"
OLD = {"options.json": b'{"old": "options"}', "weights.hdf5": b"old weights", "softmax.hdf5": b"s"}


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _old_outputs(out: Path, names=("options.json", "weights.hdf5")) -> Dict[str, bytes]:
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        (out / name).write_bytes(OLD[name])
    return {name: OLD[name] for name in names}


def _contents(out: Path) -> Dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


def _source_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "source"
    folder.mkdir()
    shutil.copyfile(OPTIONS_FILE, folder / "options.json")
    shutil.copyfile(WEIGHT_FILE, folder / "weights.hdf5")
    return folder


def test_a_disk_that_fills_keeps_the_old_pair_and_says_so(tmp_path, monkeypatch, capsys):
    """`elmo-convert SRC OUT --overwrite`: the weights' copy fails with ENOSPC after the options
    were written. The old options.json and weights.hdf5 are both as they were (before: the new
    options beside the old weights, and "nothing was written")."""
    source, out = _source_folder(tmp_path), tmp_path / "out"
    old = _old_outputs(out)
    copy = shutil.copyfile

    def full_at_the_weights(src, dst, *args, **kwargs):
        if str(src).endswith("weights.hdf5"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return copy(src, dst, *args, **kwargs)

    monkeypatch.setattr(convert_cli.shutil, "copyfile", full_at_the_weights)
    with pytest.raises(SystemExit) as exited:
        elmo_convert([str(source), str(out), "--overwrite"])
    message = str(exited.value.code)
    assert message.startswith("elmo-convert: error: ") and "\n" not in message
    assert "the disk is full" in message and str(out / "weights.hdf5") in message
    assert _contents(out) == old  # the old pair, and no staging folder left
    monkeypatch.setattr(convert_cli.shutil, "copyfile", copy)
    elmo_convert([str(source), str(out), "--overwrite"])  # with room: the new pair
    assert _contents(out) == {
        "options.json": OPTIONS_FILE.read_bytes(),
        "weights.hdf5": WEIGHT_FILE.read_bytes(),
    }


def test_a_checkpoint_conversion_that_fails_to_move_a_file_in_keeps_the_old_set(
    tmp_path, monkeypatch
):
    """The set appears whole or not at all: if the last file cannot be moved into place, the
    ones moved before it go and the old ones come back."""
    out = tmp_path / "out"
    old = _old_outputs(out, tuple(OLD))
    replace = os.replace

    def refuses_softmax(src, dst, *args, **kwargs):
        if str(dst).endswith(os.sep + "softmax.hdf5") and "new" in str(src):
            raise OSError(errno.EIO, "Input/output error (simulated)")
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(file_sets.os, "replace", refuses_softmax)
    with pytest.raises(OSError, match="simulated"):
        convert_checkpoint(CHECKPOINT, out, overwrite=True)
    assert _contents(out) == old
    monkeypatch.setattr(file_sets.os, "replace", replace)

    def refuses(src, dst):  # a new folder appears by one rename of the complete set
        raise OSError(errno.EIO, "Input/output error (simulated)")

    monkeypatch.setattr(file_sets.os, "rename", refuses)
    with pytest.raises(OSError, match="simulated"):  # and without old files: none is left
        convert_checkpoint(CHECKPOINT, tmp_path / "fresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_export_that_fills_the_disk_keeps_the_old_pair(tmp_path, monkeypatch):
    bilm = resolve_bilm(str(OPTIONS_FILE), str(WEIGHT_FILE)).load()
    out = tmp_path / "out"
    old = _old_outputs(out)
    write = bilm_tf._write_bilm_tf

    def fills(bilm, weight_file, options_file, *rest):
        write(bilm, weight_file, options_file, *rest)
        raise OSError(errno.ENOSPC, "No space left on device")  # say, closing the last file

    monkeypatch.setattr(bilm_tf, "_write_bilm_tf", fills)
    with pytest.raises(OSError) as raised:
        bilm_tf.export_bilm_tf(bilm, out / "options.json", out / "weights.hdf5", overwrite=True)
    assert "the disk is full" in str(raised.value) and "\n" not in str(raised.value)
    assert _contents(out) == old


@pytest.mark.parametrize("killed", ["while writing", "mid-swap", "after the swap"])
@pytest.mark.parametrize("named", ["a random name", "this process's id"])
def test_a_writer_killed_midway_is_undone_at_the_next_start(tmp_path, killed, named):
    """A dead writer's staging folder as SIGKILL leaves it at each stage: the next writer into
    the folder puts the old set back (or, once the swap was complete, keeps the new one) and
    removes the staging folder; then writes its own. One named with this process's own id (as
    an earlier version named them: PID 1 in a container never cleaned its own) is a leftover
    all the same: no writer holds the folder's lock."""
    out = tmp_path / "out"
    old = _old_outputs(out)
    tag = "k3x9q2zz" if named == "a random name" else str(os.getpid())
    staging = out / f"{file_sets.STAGING_PREFIX}{tag}{file_sets.STAGING_SUFFIX}"
    (staging / "new").mkdir(parents=True)
    record = {"0.json": str(out / "options.json"), "1.hdf5": str(out / "weights.hdf5")}
    (staging / "set.json").write_text(json.dumps({"files": record, "stagings": [str(staging)]}))
    (staging / "new" / "0.json").write_bytes(b"new options")
    (staging / "new" / "1.hdf5").write_bytes(b"new weights")
    expected = old
    if killed != "while writing":  # both old files aside, the options moved in
        (staging / "old").mkdir()
        os.replace(out / "options.json", staging / "old" / "0.json")
        os.replace(out / "weights.hdf5", staging / "old" / "1.hdf5")
        os.replace(staging / "new" / "0.json", out / "options.json")
    if killed == "after the swap":
        os.replace(staging / "new" / "1.hdf5", out / "weights.hdf5")
        (staging / "committed").mkdir()
        expected = {"options.json": b"new options", "weights.hdf5": b"new weights"}
    assert file_sets.sweep(out) == [str(staging)]
    assert _contents(out) == expected and not staging.exists()


def test_a_live_writers_staging_folder_is_left_and_refuses(tmp_path):
    """A writer that holds the folder's lock (a live process) is left alone and refuses the
    next; once it is killed (SIGKILL: its lock dies with it) the next writer undoes its staging
    folder at once (no process id, no day's wait)."""
    out = tmp_path / "out"
    old = _old_outputs(out)
    script = (
        "import sys\n"
        "from elmo_bilm.utils.file_sets import output_set\n"
        f"with output_set({{'options': {str(out / 'options.json')!r}}}, overwrite=True) as s:\n"
        "    open(s['options'], 'w').write('new')\n"
        "    print('writing', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        try:
            assert other.stdout.readline() == "writing\n"
            with pytest.raises(FileExistsError, match=f"process {other.pid}"):
                file_sets.sweep(out)
            with pytest.raises(FileExistsError, match=f"process {other.pid}"):
                with file_sets.output_set({"options": out / "options.json"}, overwrite=True):
                    pass
            staging = [p for p in out.iterdir() if p.name.endswith(".partial")]
            assert len(staging) == 1
        finally:
            other.kill()
    assert file_sets.sweep(out) == [str(staging[0])]
    assert _contents(out) == old


def test_a_conversion_into_the_cache_killed_before_its_rename_is_swept(tmp_path, monkeypatch):
    """A TensorFlow checkpoint converted into the cache's `converted/` goes through a hidden
    folder renamed at the end; one left by a killed process was never removed."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ELMO_BILM_CACHE", str(cache))
    source = resolve_bilm(str(CHECKPOINT))
    converted = cache / "converted"
    converted.mkdir(parents=True)
    leftover = converted / f".0123456789abcdef.{_dead_pid()}.k3x9q2zz"
    leftover.mkdir()
    (leftover / "weights.hdf5").write_bytes(b"half a conversion")
    files = resolver._converted(source)
    assert not leftover.exists()
    assert [path.name for path in converted.iterdir()] == [Path(files.weight_file).parent.name]


def test_a_planted_record_moves_or_removes_nothing_outside_its_folder(tmp_path):
    """A staging folder planted in a shared output folder, its record naming files elsewhere
    (or here under other names): the sweep removes the staging folder and touches nothing else."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    old = _old_outputs(out)
    elsewhere.mkdir()
    (elsewhere / "important").write_bytes(b"keep me")
    staging = out / f"{file_sets.STAGING_PREFIX}{_dead_pid()}{file_sets.STAGING_SUFFIX}"
    (staging / "new").mkdir(parents=True)
    (staging / "old").mkdir()
    (staging / "old" / "0-important").write_bytes(b"planted")
    record = {
        "0-important": str(elsewhere / "important"),  # outside the folder
        "1-x": str(out / "options.json"),  # not the name it was staged under
        "../2-weights.hdf5": str(out / "weights.hdf5"),
    }
    (staging / "set.json").write_text(json.dumps(record))
    assert file_sets.sweep(out) == [str(staging)]
    assert (elsewhere / "important").read_bytes() == b"keep me"
    assert _contents(out) == old


def test_an_output_that_is_a_folder_is_refused_even_with_overwrite(tmp_path):
    """elmo-convert --overwrite with an output named like a folder that exists removed the
    folder and everything in it (it was renamed aside as the old output, then deleted)."""
    folder = tmp_path / "weights.hdf5"
    folder.mkdir()
    (folder / "precious.txt").write_text("kept")
    with pytest.raises(IsADirectoryError, match="a folder, not a file"):
        with file_sets.output_set(
            {"weights": folder, "options": tmp_path / "options.json"}, overwrite=True
        ) as staged:
            for path in staged.values():
                Path(path).write_text("new")
    assert (folder / "precious.txt").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weights.hdf5"]


def test_an_output_folder_that_is_a_file_is_named_as_a_file(tmp_path):
    (tmp_path / "out").write_text("a file")
    with pytest.raises(NotADirectoryError, match="a file, not a folder"):
        with file_sets.output_set({"weights": tmp_path / "out" / "weights.hdf5"}):
            pass


def test_an_output_that_is_a_link_elsewhere_is_replaced_not_its_target(tmp_path):
    """The link in the output folder is what is replaced; the file it pointed to (another
    user's, another folder's) is left as it was."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "options.json").write_text("theirs")
    out = tmp_path / "out"
    out.mkdir()
    (out / "options.json").symlink_to(elsewhere / "options.json")
    with file_sets.output_set({"options": out / "options.json"}, overwrite=True) as staged:
        Path(staged["options"]).write_text("ours")
    assert (elsewhere / "options.json").read_text() == "theirs"
    assert not (out / "options.json").is_symlink() and (out / "options.json").read_text() == "ours"


def test_ctrl_c_midway_keeps_the_old_set(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with file_sets.output_set(
            {"a": tmp_path / "a.json", "b": tmp_path / "b.json"}, overwrite=True
        ) as staged:
            Path(staged["a"]).write_text("new")
            raise KeyboardInterrupt
    assert [(tmp_path / n).read_text() for n in ("a.json", "b.json")] == ["old", "old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_elmo_convert_into_a_file_is_one_line_before_the_biLM_is_resolved(tmp_path, monkeypatch):
    """`elmo-convert SOURCE weights.hdf5 --overwrite` (the output folder typed as a file) was
    os.makedirs' bare "[Errno 17] File exists: 'weights.hdf5'", after the source was resolved
    (a download, an unpacking); the file is left as it was."""
    target = tmp_path / "weights.hdf5"
    target.write_bytes(b"kept")
    resolved = []
    monkeypatch.setattr(convert_cli, "resolve_bilm", lambda *a: resolved.append(a))
    with pytest.raises(SystemExit) as exit_:
        elmo_convert([str(CHECKPOINT), str(target), "--overwrite"])
    err = str(exit_.value.code)
    assert err.count("\n") == 0 and "a file, not a folder" in err, err
    assert not resolved and target.read_bytes() == b"kept"
