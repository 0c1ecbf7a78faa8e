"""The HDF5 layout's one writer (`elmo_bilm.formats.hdf5.Hdf5Sink`): a sentence key HDF5 cannot
take, or one that repeats, is an error naming FILE:LINE before anything is written."""

import io

import h5py
import numpy
import pytest

from elmo_bilm.formats.hdf5 import Hdf5Sink
from elmo_bilm.utils.errors import FormatError


@pytest.mark.parametrize("line", [".", "..", "and/or", "/"])
def test_a_key_hdf5_cannot_take_names_file_and_line(line) -> None:
    with pytest.raises(FormatError, match=r"^in\.txt:2: .*cannot name an HDF5 dataset"):
        with Hdf5Sink(io.BytesIO(), "in.txt", sentence_keys=True) as sink:
            sink.index([(0, "fine", ["fine"]), (1, line, [line])])


def test_a_repeated_key_names_both_lines_and_the_index_is_written() -> None:
    with pytest.raises(FormatError, match=r"^in\.txt:3: repeats line 1"):
        with Hdf5Sink(io.BytesIO(), "in.txt", sentence_keys=True) as sink:
            sink.index([(0, "a b", ["a", "b"]), (1, "c", ["c"]), (2, "a b", ["a", "b"])])
    raw = io.BytesIO()
    with Hdf5Sink(raw, "in.txt") as sink:
        batch = [(0, "a b", ["a", "b"]), (1, "c", ["c"])]
        sink.index(batch)
        sink.write(batch, 0, numpy.ones((2, 3, 2, 4), numpy.float32))
    with h5py.File(raw, "r") as out:
        assert out["0"].shape == (3, 2, 4) and out["1"].shape == (3, 1, 4)
        assert out["sentence_to_index"][0] == b'{"a b": "0", "c": "1"}'
