"""The HDF5 layout of AllenNLP 0.9's `allennlp elmo` (and FASTA's, bio_embeddings'): one dataset
per item, named by its 0-based line (or its stripped line with sentence keys, or a record's id),
and `sentence_to_index`, a `(1,)` string dataset holding the JSON of {stripped line: its name}.
A dataset holds `(n_layers, n_tokens, dim)` for the layers "all", else `(n_tokens, dim)`; reduced
to one vector per item (`elmo-embed --reduce`), `(n_layers, dim)` or `(dim,)`.
The project's one writer of it (`Hdf5Sink`)."""

import json
from typing import Any, Dict, Sequence

import h5py
import numpy

from elmo_bilm.formats.sink import Item, Sink
from elmo_bilm.formats.text import source_name
from elmo_bilm.utils.errors import FormatError, UsageError


def write_rows(
    out: h5py.Group, name: str, host: numpy.ndarray, start: int, length: int, dtype: str
) -> h5py.Dataset:
    """Write one sentence's kept layers (`host`: `(n_layers, T, dim)` or `(T, dim)`, a padded
    row or a piece from token `start`) into dataset `name` of `length` tokens: made whole from a
    complete row, else made at the first piece and written by slices."""
    data = host[..., : length - start, :].astype(dtype, copy=False)
    if start == 0 and data.shape[-2] == length:
        return out.create_dataset(name, data=data)
    if start == 0:
        out.create_dataset(name, data.shape[:-2] + (length, data.shape[-1]), dtype=dtype)
    dataset = out[name]
    dataset[..., start : start + data.shape[-2], :] = data
    return dataset


class Hdf5Sink(Sink):
    """`allennlp elmo`'s layout into `raw` (an open binary file: a full disk then raises
    `OSError` in Python, where HDF5 writing to a path crashed in its cache flush). Datasets are
    named by the item's 0-based index, or with `sentence_keys` by its name (a name HDF5 cannot
    take, or one that repeats, is a `FormatError` naming `input_name`:LINE); `sentence_index`
    writes `sentence_to_index`; `original_id` gives each dataset that attribute (FASTA);
    `reduced`: one vector per item (`ReducingSink`), `(dim,)` or `(n_layers, dim)` for "all"."""

    def __init__(
        self,
        raw: Any,
        input_name: str,
        dtype: str = "float32",
        sentence_index: bool = True,
        sentence_keys: bool = False,
        original_id: bool = False,
        reduced: bool = False,
    ) -> None:
        if not getattr(raw, "readable", bool)():  # h5py reads back what it writes
            raise UsageError(f"{source_name(raw)}: HDF5 needs a file open with 'w+b', not 'wb'")
        self.out = h5py.File(raw, "w")
        self.input_name, self.dtype, self.original_id = input_name, dtype, original_id
        self.sentence_index, self.sentence_keys = sentence_index, sentence_keys
        self.reduced = reduced
        self.sentence_to_index: Dict[str, str] = {}

    def index(self, chunk: Sequence[Item]) -> None:
        for index, line, _ in chunk:
            if self.sentence_keys and (line in (".", "..") or "/" in line):
                raise FormatError(
                    f"{self.input_name}:{index + 1}: {line[:40]!r} cannot name an HDF5 dataset "
                    "('/' separates HDF5 groups; '.' is the file itself); leave out "
                    "--use-sentence-keys (datasets are then named by line number)"
                )
            if self.sentence_keys and line in self.sentence_to_index:
                raise FormatError(
                    f"{self.input_name}:{index + 1}: repeats line "
                    f"{int(self.sentence_to_index[line]) + 1}; sentences cannot name "
                    "datasets twice (do not use sentence keys)"
                )
            if self.sentence_keys or self.sentence_index:
                self.sentence_to_index[line] = str(index)

    def write(self, batch: Sequence[Item], start: int, host: numpy.ndarray) -> None:
        for row, (index, line, words) in enumerate(batch):
            name = line if self.sentence_keys else str(index)
            if self.reduced:
                dataset = self.out.create_dataset(name, data=host[row].astype(self.dtype))
            else:
                dataset = write_rows(self.out, name, host[row], start, len(words), self.dtype)
            if self.original_id:
                dataset.attrs["original_id"] = name

    def close(self, complete: bool = True) -> None:
        if complete and self.sentence_index and not self.sentence_keys:
            dataset = self.out.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
            dataset[0] = json.dumps(self.sentence_to_index)
        self.out.close()
