"""ELMo vectors as Parquet: one row per sentence (`file`, `line`, `start`, `tokens`, `embeddings`), the
vectors in float32 or float16, written by `elmo-embed --format parquet` and `elmo-embed-corpus`,
read back as numpy arrays by `read_embeddings`. Needs pyarrow (elmo-bilm's `ray` extra: `EXTRA`).

A row's `embeddings` is its vectors flattened, `(n_layers, n_tokens, dim)` for the layers "all"
and `(n_tokens, dim)` otherwise (the shapes of `allennlp elmo`'s HDF5 datasets); the file's
schema metadata (`elmo_bilm`) holds `layers`, `n_layers`, `dim` and `dtype` to shape it back.
Rows are stored in the order they were embedded (by length within a chunk or shard); each names
its source file and 1-based line. A sentence longer than the token budget is written as it is
embedded, a piece at a time: rows of the same file and line, in order, each with its piece's
tokens and the index of its first token in `start` (0 for a whole sentence; files written before
the column existed read as 0).

Reduced to one vector per sentence (`elmo-embed --reduce`; the metadata's `reduce` names the
reduction), a row's `embeddings` is `(n_layers, dim)` for "all", else `(dim,)`, and its `tokens`
the whole sentence's.
"""

import importlib
import json
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Union

import numpy

from elmo_bilm.formats.sink import Item, Sink
from elmo_bilm.utils.errors import install_extra
from elmo_bilm.utils.files import FormatError, UsageError

EXTRA = install_extra("ray")
DTYPES = ("float32", "float16")
METADATA_KEY = b"elmo_bilm"


def import_extra(module: str, needs: str) -> Any:
    """`module`, or an `ImportError` saying `needs` and the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{needs}: {EXTRA}") from error


def require_pyarrow() -> Any:
    """`pyarrow.parquet` (Parquet output and reading)."""
    return import_extra("pyarrow.parquet", "Parquet output needs pyarrow")


@dataclass
class EmbeddedSentence:
    """One row: the source `file`, its 1-based `line`, the `tokens`, and their `embeddings`
    (`(n_layers, n_tokens, dim)` for the layers "all", else `(n_tokens, dim)`; reduced:
    `(n_layers, dim)` or `(dim,)`); `start`: the
    index of its first token in the sentence (not 0: a piece of a long sentence)."""

    file: str
    line: int
    tokens: List[str]
    embeddings: numpy.ndarray
    start: int = 0


class EmbeddingWriter:
    """Parquet rows for batches of embedded sentences, one row group per `write`. `sink` is a
    path or a writable binary stream (a partial file the caller publishes when complete);
    `reduce`: each row one vector per sentence (`(batch, n_layers, dim)` or `(batch, dim)`)."""

    def __init__(
        self,
        sink: Union[str, BinaryIO],
        layers: str,
        n_layers: int,
        dim: int,
        dtype: str = "float32",
        metadata: Optional[Dict[str, Any]] = None,
        reduce: Optional[str] = None,
    ) -> None:
        if dtype not in DTYPES:
            raise UsageError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        pq = require_pyarrow()
        import pyarrow as pa

        self._pa = pa
        self.dtype = numpy.dtype(dtype)
        self.layers, self.n_layers, self.dim, self.reduce = layers, n_layers, dim, reduce
        description = {"layers": layers, "n_layers": n_layers, "dim": dim, "dtype": dtype}
        if reduce is not None:
            description["reduce"] = reduce
        self.schema = pa.schema(
            [
                ("file", pa.string()),
                ("line", pa.int64()),
                ("start", pa.int64()),
                ("tokens", pa.list_(pa.string())),
                ("embeddings", pa.list_(pa.float16() if dtype == "float16" else pa.float32())),
            ],
            metadata={METADATA_KEY: json.dumps({**description, **(metadata or {})})},
        )
        # zstd: a few percent smaller than no compression on float vectors, at little cost
        self._writer = pq.ParquetWriter(sink, self.schema, compression="zstd")
        self.rows = 0

    def write(
        self,
        files: Sequence[str],
        lines: Sequence[int],
        tokens: Sequence[Sequence[str]],
        vectors: numpy.ndarray,
        start: int = 0,
    ) -> None:
        """A batch: `vectors` padded, `(batch, n_layers, T, dim)` for "all", else
        `(batch, T, dim)`; row `i` keeps its first `len(tokens[i])` positions. `start`: the
        index of the first token of each row in its sentence (a piece of a long one)."""
        pa = self._pa
        rows = [
            numpy.ascontiguousarray(
                vectors[i] if self.reduce else vectors[i, ..., : len(words), :], dtype=self.dtype
            ).ravel()
            for i, words in enumerate(tokens)
        ]
        offsets = numpy.zeros(len(rows) + 1, dtype=numpy.int32)
        numpy.cumsum([row.size for row in rows], out=offsets[1:])
        values = numpy.concatenate(rows) if rows else numpy.zeros(0, self.dtype)
        table = pa.table(
            [
                pa.array(list(files), pa.string()),
                pa.array(list(lines), pa.int64()),
                pa.array([start] * len(rows), pa.int64()),
                pa.array([list(words) for words in tokens], pa.list_(pa.string())),
                pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)),
            ],
            schema=self.schema,
        )
        self._writer.write_table(table)
        self.rows += len(rows)

    def close(self) -> None:
        """Finish the Parquet file (its footer); a stream passed as `sink` is left open."""
        self._writer.close()


class ParquetSink(Sink):
    """One Parquet row per item (`EmbeddingWriter`), a row group per batch: the rows of
    `elmo-embed --format parquet` and of each `elmo-embed-corpus` shard, each naming
    `input_name` and its 1-based line (the item's index + 1); `reduce`: one vector per item
    (`ReducingSink`), its row's tokens the item's own."""

    def __init__(
        self,
        stream: Any,
        input_name: str,
        layers: str,
        n_layers: int,
        dim: int,
        dtype: str = "float32",
        metadata: Optional[Dict[str, Any]] = None,
        reduce: Optional[str] = None,
    ) -> None:
        self.input_name = input_name
        self.writer = EmbeddingWriter(stream, layers, n_layers, dim, dtype, metadata, reduce)

    def write(self, batch: Sequence[Item], start: int, host: numpy.ndarray) -> None:
        # a piece's tokens (a whole batch: its longest, each row cut to its own; all if reduced)
        end = None if self.writer.reduce else start + host.shape[-2]
        self.writer.write(
            [self.input_name] * len(batch),
            [index + 1 for index, _, _ in batch],
            [words[start:end] for _, _, words in batch],
            host,
            start=start,
        )

    def close(self, complete: bool = True) -> None:
        self.writer.close()


def parquet_files(path: str) -> List[str]:
    """`path` itself, or a folder's `*.parquet` files (the shards of `elmo-embed-corpus`) in
    name order."""
    if not os.path.isdir(path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file or folder")
        return [path]
    files = sorted(
        os.path.join(path, name) for name in os.listdir(path) if name.endswith(".parquet")
    )
    if not files:
        raise FileNotFoundError(f"{path}: no .parquet files in that folder")
    return files


def read_embeddings(path: str) -> Iterator[EmbeddedSentence]:
    """Every row of a Parquet file of ELMo vectors, or of a folder of shards, as
    `EmbeddedSentence`s with numpy arrays (float32 or float16, as written); one row group in
    memory at a time."""
    pq = require_pyarrow()
    for name in parquet_files(path):
        try:
            handle = pq.ParquetFile(name)
        except (ValueError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise FormatError(
                f"{name}: not a complete Parquet file, truncated or damaged "
                f"({str(error).splitlines()[0]}); embed it again (a re-run of elmo-embed-corpus "
                "redoes its truncated shards)"
            ) from error
        metadata = (handle.schema_arrow.metadata or {}).get(METADATA_KEY)
        if metadata is None:
            raise FormatError(f"{name}: not a file of ELMo vectors (no elmo_bilm metadata)")
        description = json.loads(metadata)
        depth = description["n_layers"] if description["layers"] == "all" else None
        dim, reduced = description["dim"], "reduce" in description
        for group in range(handle.num_row_groups):
            table = handle.read_row_group(group)
            embeddings = table.column("embeddings").combine_chunks()
            values = embeddings.values.to_numpy(zero_copy_only=False)
            offsets = embeddings.offsets.to_numpy()
            files = table.column("file").to_pylist()
            lines = table.column("line").to_pylist()
            tokens = table.column("tokens").to_pylist()
            names = table.column_names
            starts = table.column("start").to_pylist() if "start" in names else [0] * len(tokens)
            for i, words in enumerate(tokens):
                steps = () if reduced else (len(words),)
                shape = (*steps, dim) if depth is None else (depth, *steps, dim)
                vectors = values[offsets[i] : offsets[i + 1]].reshape(shape)
                yield EmbeddedSentence(files[i], lines[i], words, vectors, starts[i])
