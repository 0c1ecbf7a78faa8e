"""The stateful `ElmoEmbedder.embed_file` writes through the HDF5 layout's one sink
(`elmo_bilm.formats.hdf5`), with `elmo-embed`'s output checks and FILE:LINE errors, reading any
path or file object AllenNLP 0.9's method took."""

import io
import os
import stat

import h5py
import numpy
import pytest

from elmo_bilm import ElmoEmbedder
from elmo_bilm.utils.errors import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


@pytest.fixture(scope="module")
def embedder():
    return ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))


def datasets(path):
    with h5py.File(path, "r") as out:
        return {key: out[key][()] for key in out}


def test_a_fifo_named_as_output_is_refused_not_replaced(tmp_path, embedder):
    (tmp_path / "in.txt").write_text("a cat\n")
    fifo = tmp_path / "out.hdf5"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        embedder.embed_file(str(tmp_path / "in.txt"), str(fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(UsageError, match="not a regular file"):
        embedder.embed_file(str(tmp_path / "in.txt"), os.devnull)


def test_an_absolute_path_reads_that_file_not_one_of_its_name_here(tmp_path, embedder, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("a cat\nsat on it\n")
    (tmp_path / "in.txt").write_text("only here\n")
    monkeypatch.chdir(tmp_path)
    from pathlib import Path

    embedder.embed_file(Path(tmp_path / "sub" / "in.txt"), tmp_path / "out.hdf5")
    written = datasets(tmp_path / "out.hdf5")
    assert sorted(written) == ["0", "1", "sentence_to_index"]
    assert written["1"].shape[1] == 3


def test_file_objects_write_what_the_path_writes(tmp_path, embedder):
    text = "a cat\nsat on it\n.\n"
    path = tmp_path / "in.txt"
    path.write_text(text)
    embedder.states = ()
    embedder.embed_file(str(path), str(tmp_path / "path.hdf5"))
    wanted = datasets(tmp_path / "path.hdf5")
    opened = [
        lambda: io.StringIO(text),
        lambda: open(path, encoding="utf-8"),
        lambda: os.fdopen(os.open(path, os.O_RDONLY), "rb"),
    ]
    for number, source in enumerate(opened):
        embedder.states = ()  # stateful: each run from zero states, as the first did
        with source() as handle:
            embedder.embed_file(handle, str(tmp_path / f"{number}.hdf5"))
        written = datasets(tmp_path / f"{number}.hdf5")
        assert written.keys() == wanted.keys()
        for key in wanted:
            numpy.testing.assert_array_equal(written[key], wanted[key], err_msg=key)
    embedder.states = ()
    with open(tmp_path / "into.hdf5", "w+b") as output:  # an open file (h5py reads it too)
        embedder.embed_file(str(path), output)
    assert datasets(tmp_path / "into.hdf5").keys() == wanted.keys()


@pytest.mark.parametrize("line", [".", "and/or"])
def test_sentence_keys_that_hdf5_cannot_take_name_file_and_line(tmp_path, embedder, line):
    (tmp_path / "in.txt").write_text(f"a cat\n{line}\n")
    with pytest.raises(FormatError, match=r"in\.txt:2: .*cannot name an HDF5 dataset"):
        embedder.embed_file(
            str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), use_sentence_keys=True
        )
    assert not (tmp_path / "o.hdf5").exists()


def test_a_closed_or_write_only_file_object_is_one_line(tmp_path, embedder):
    """Careless file objects (closed, opened for writing as input, an output opened 'wb' or as
    text, which h5py cannot read back) are a UsageError naming the file and the mode to use,
    not a bare ValueError or h5py's UnsupportedOperation / TypeError; nothing is written."""
    (tmp_path / "in.txt").write_text("a cat\n")
    with open(tmp_path / "in.txt") as closed:
        pass
    with pytest.raises(UsageError, match="in.txt: the file object is closed"):
        embedder.embed_file(closed, str(tmp_path / "a.hdf5"))
    for mode in ("w", "wb"):
        with open(tmp_path / f"input.{mode}", mode) as handle:
            with pytest.raises(UsageError, match="not open for reading"):
                embedder.embed_file(handle, str(tmp_path / "b.hdf5"))
    for mode in ("wb", "w"):
        with open(tmp_path / f"out.{mode}.hdf5", mode) as handle:
            with pytest.raises(UsageError, match="'w[+]b'"):
                embedder.embed_file(str(tmp_path / "in.txt"), handle)
        assert (tmp_path / f"out.{mode}.hdf5").stat().st_size == 0
    assert not (tmp_path / "a.hdf5").exists() and not (tmp_path / "b.hdf5").exists()
    with open(tmp_path / "c.hdf5", "w+b") as handle:  # the mode it names works
        embedder.embed_file(str(tmp_path / "in.txt"), handle)
    assert list(datasets(tmp_path / "c.hdf5")) == ["0", "sentence_to_index"]
