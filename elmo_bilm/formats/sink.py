"""The one way an embedding run writes its output: a `Sink` (the AllenNLP HDF5 layout,
`elmo_bilm.formats.hdf5`; Parquet rows, `elmo_bilm.formats.parquet`) that `elmo-embed`, the
FASTA runs, the stateful `ElmoEmbedder.embed_file` and each `elmo-embed-corpus` worker write
through, so that a layout has one writer and one set of checks."""

import contextlib
import errno
import os
import shutil
from typing import Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, Sequence, Tuple, Union

import numpy

from elmo_bilm.formats.text import Item, Source, check_input, is_file_object, source_name
from elmo_bilm.utils.checks import check_output, whole_number
from elmo_bilm.utils.devices import available
from elmo_bilm.utils.errors import FormatError, UsageError
from elmo_bilm.utils.files import atomic_output

# Where a sink writes: a path (published by one rename when complete) or an open binary file.
Output = Union[str, BinaryIO]


class Sink:
    """Where a run writes: `index` sees each chunk of items in input order before it is run,
    `write` each batch (or piece of a long item: `start` its first token) with its kept layers
    `host` (row `r` holds item `r`'s vectors in its first positions); `close(complete=False)`
    after an error only releases the file. A context manager: closes complete on success."""

    def __enter__(self) -> "Sink":
        return self

    def __exit__(self, error_type: object, *exc: object) -> None:
        self.close(complete=error_type is None)

    def index(self, chunk: Sequence[Item]) -> None:
        """Check and record a chunk's names (nothing by default)."""

    def write(self, batch: Sequence[Item], start: int, host: numpy.ndarray) -> None:
        """Write a batch's (or a piece's) kept layers."""
        raise NotImplementedError

    def close(self, complete: bool = True) -> None:
        """Finish the file (`complete`), or only release it after an error."""


# one vector per item (`elmo-embed --reduce`): the mean over its tokens of the kept layers
# (bio_embeddings' `reduce_per_protein` with the layers summed: `--mix 0 0 0 --gamma 3`), or that
# mean divided by its L2 norm, the Frobenius norm of `(n_layers, dim)` for "all" (simple_elmo's
# `get_elmo_vector_average`, stateless: over the item's own tokens)
REDUCTIONS = ("mean", "unit-mean")


def check_reduction(reduction: str) -> None:
    """A `UsageError` unless `reduction` is one of `REDUCTIONS`."""
    if reduction not in REDUCTIONS:
        raise UsageError(f"reduce must be one of {REDUCTIONS}, got {reduction!r}")


class ReducingSink(Sink):
    """One vector per item into `inner` (a sink made `reduced`: each row of `host` one item's
    `(dim,)`, or `(n_layers, dim)` for "all"): the `reduction` (`REDUCTIONS`) over the item's
    tokens of what it receives, summed in float64 piece by piece (a long item's pieces held as
    one running sum, not its tokens) and written when its last token has come, so that any
    format writes the reduced vectors as it writes the per-token ones."""

    def __init__(self, inner: Sink, reduction: str) -> None:
        check_reduction(reduction)
        self.inner, self.reduction = inner, reduction
        self.sums: Dict[int, numpy.ndarray] = {}  # by item index: the items begun, not ended

    def index(self, chunk: Sequence[Item]) -> None:
        self.inner.index(chunk)

    def write(self, batch: Sequence[Item], start: int, host: numpy.ndarray) -> None:
        done, vectors = [], []
        for row, item in enumerate(batch):
            index, _, words = item
            count = min(host.shape[-2], len(words) - start)  # the row's own tokens here
            part = host[row, ..., :count, :].sum(axis=-2, dtype=numpy.float64)
            total = self.sums.pop(index) + part if start > 0 else part
            if start + count < len(words):
                self.sums[index] = total
                continue
            done.append(item)
            vectors.append(self.finish(total / len(words)))
        if done:
            self.inner.write(done, 0, numpy.stack(vectors))

    def finish(self, mean: numpy.ndarray) -> numpy.ndarray:
        """An item's mean as the reduction asks: as it is, or scaled to unit length (a zero
        mean stays zero, as the simple_elmo drop-in's)."""
        if self.reduction == "mean":
            return mean
        norm = numpy.linalg.norm(mean)
        return mean / norm if norm > 0 else mean

    def close(self, complete: bool = True) -> None:
        self.inner.close(complete)


def check_free_space(output_file: str, needed: int) -> None:
    """Refuse up front an output that the disk cannot hold (HDF5 must never meet a full disk:
    the library then fails inside its caches)."""
    folder = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(folder):
        return  # `atomic_output` names the missing folder
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise OSError(
            errno.ENOSPC,
            f"{output_file}: needs about {needed / 2**20:.1f} MB, {folder} has "
            f"{free / 2**20:.1f} MB free",
        )


@contextlib.contextmanager
def output_stream(output_file: Output, overwrite: bool) -> Iterator[BinaryIO]:
    """A sink's file: `OUTPUT.PID.partial` opened for writing through a Python file object (a
    full disk raises `OSError` there, where HDF5 writing to the path itself crashed in its cache
    flush), renamed into place when the block ends without an error, removed otherwise; an open
    binary file the caller gave is written as it is."""
    if not isinstance(output_file, str):
        yield output_file
        return
    with atomic_output(output_file, overwrite) as partial, open(partial, "w+b") as raw:
        yield raw


Pieces = Iterable[Tuple[List[Item], int, numpy.ndarray]]


def write_chunks(
    output_file: Output,
    overwrite: bool,
    make_sink: Callable[[BinaryIO], Sink],
    chunks: Iterable[List[Item]],
    pieces: Callable[[List[Item]], Pieces],
    written: Callable[[List[Item], numpy.ndarray], None] = lambda batch, host: None,
    empty: str = "no sentences",
) -> int:
    """The one way a run writes a file: each chunk of items indexed by the sink (its names
    checked) before it is run, then its `pieces` (`(batch, start, kept layers)`, as
    `elmo_bilm.runtime.engine.batch_pieces` makes them) written, each also given to `written`
    (a progress bar); the file published only when complete (`output_stream`). `empty`: the
    error when there were no items (a stream is known empty only at its end). Returns the number
    of items."""
    count = 0
    with output_stream(output_file, overwrite) as raw, make_sink(raw) as sink:
        for chunk in chunks:
            sink.index(chunk)
            count += len(chunk)
            for batch, start, host in pieces(chunk):
                sink.write(batch, start, host)
                written(batch, host)
        if count == 0:
            raise FormatError(empty)
    return count


def check_paths(input_file: Source, output_file: Output, overwrite: bool) -> None:
    """Before any work: the input (`check_input`: a file, a stream or a file object) and the
    output (`check_output`: a file, not a device or FIFO, which the rename into place would
    replace; not there unless `overwrite`; in a writable folder; not the input)."""
    check_input(input_file)
    if not isinstance(output_file, str):  # an open binary file: written as it is, by h5py
        handle: Any = output_file
        usable = not getattr(handle, "closed", False) and "b" in str(getattr(handle, "mode", "b"))
        if not (usable and getattr(handle, "writable", bool)()):
            raise UsageError(
                f"{source_name(handle)}: not a binary file open for writing; open it with 'w+b' "
                "(or pass a path)"
            )
        return
    check_output(output_file, overwrite)
    if not is_file_object(input_file) and os.path.exists(output_file):
        if os.path.samefile(input_file, output_file):  # type: ignore[arg-type]
            raise UsageError(f"{output_file} is the input file; write the output elsewhere")


def check_run(
    input_file: Source, output_file: Output, overwrite: bool, cuda_device: int, **sizes: Any
) -> None:
    """The checks before any work of a run into a file: `sizes` (whole numbers; `max_tokens` may
    be None), the input and output (`check_paths`) and the device."""
    for name, value in sizes.items():
        whole_number(value, name, optional=name == "max_tokens")
    whole_number(cuda_device, "cuda_device", minimum=-1)
    check_paths(input_file, output_file, overwrite)
    available(cuda_device)
