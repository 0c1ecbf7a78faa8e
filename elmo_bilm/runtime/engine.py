"""Embedding a file of sentences in bulk: read in chunks, batched by length, the biLM layers
written to HDF5 in the layout of AllenNLP 0.9's `allennlp elmo`, or to Parquet
(`elmo_bilm.formats.parquet`) (the library behind the `elmo-embed` command, `ElmoEmbedder.embed_file`
and each worker of `elmo-embed-corpus`).

Memory is bounded by the chunk size, not by the input: sentences are read in chunks, sorted by
length within a chunk (similar lengths batch well; the biLM is stateless, so order is free) and
written as they are embedded. A sentence longer than the token budget is run in pieces
(`elmo_bilm.model.chunked`) and written a piece at a time (HDF5 by slices of its dataset, Parquet
by rows), so that memory is set by `max_tokens` whatever a line's length.
"""

import errno
import itertools
import json
import os
import shutil
import sys
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import h5py
import numpy
import torch
from tqdm import tqdm

from elmo_bilm.formats.parquet import DTYPES, EmbeddingWriter
from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.model.chunked import chunked_layers, needs_chunks
from elmo_bilm.model.derived import fixed_weights
from elmo_bilm.runtime.layers import LAYER_CHOICES, LayerChoice, Layers
from elmo_bilm.utils.checks import check_output, whole_number
from elmo_bilm.utils.devices import Device, torch_device
from elmo_bilm.utils.files import (
    FormatError,
    UsageError,
    atomic_output,
    decode_line,
    numbered_lines,
    open_bytes,
    raw_lines,
)
from elmo_bilm.utils.progress import progress_bar

FORMATS = ("hdf5", "parquet")
# Sentences per bulk batch (`elmo-embed`, corpus workers; `elmo.DEFAULT_BATCH_SIZE` is AllenNLP's
# `ElmoEmbedder` default): length-sorted, a batch pads little, and more rows per recurrent step
# spread the step's weight traffic (docs/performance.md).
BULK_BATCH_SIZE = 128
# Padded tokens (rows x longest) per biLM batch: a batch's memory grows with them (every layer's
# outputs and the first layer's per-word input products are held for the whole batch), so the
# budget bounds memory whatever the sentence lengths; docs/performance.md has the measured peaks.
DEFAULT_MAX_TOKENS = 4096


def file_layers(layers: LayerChoice) -> Layers:
    """`layers` for an output file (HDF5 or Parquet): every layer, the top one, their average or
    a fixed mix; a choice of one vector per token of another width is refused."""
    layers = Layers.of(layers)
    if layers.name not in (*LAYER_CHOICES, "mix"):
        raise UsageError(f"an output file keeps layers {LAYER_CHOICES} or a mix, got {layers}")
    return layers


def line_words(input_file: str, line_number: int, line: str) -> List[str]:
    """The tokens of one input line; an empty line is an error naming FILE:LINE and the flag that
    leaves such lines out (`elmo-embed` and `elmo-embed-corpus` take one whitespace-tokenised
    sentence per line)."""
    words = line.split()
    if not words:
        raise FormatError(
            f"{input_file}:{line_number}: empty line; one whitespace-tokenised sentence per line "
            "(--skip-bad-lines leaves empty and non-UTF-8 lines out)"
        )
    return words


def sentence_lines(
    input_file: str, skip_bad_lines: bool = False, skipped: Optional[List[int]] = None
) -> Iterator[Tuple[int, str, List[str]]]:
    """`(line number, line, tokens)` of every line of a UTF-8 (possibly gzip) file, numbered from
    1; an empty or non-UTF-8 line is a `FormatError` naming FILE:LINE, or with `skip_bad_lines`
    left out, its number appended to `skipped`."""
    line_number = 0
    with open_bytes(input_file) as handle:
        try:
            for line_number, (_, raw) in enumerate(raw_lines(handle), start=1):
                try:
                    line = decode_line(input_file, line_number, raw)
                    words = line_words(input_file, line_number, line)
                except FormatError:
                    if not skip_bad_lines:
                        raise
                    if skipped is not None:
                        skipped.append(line_number)
                    continue
                yield line_number, line, words
        except (OSError, EOFError) as error:
            raise FormatError(f"{input_file}:{line_number + 1}: read failed ({error})") from error


def count_sentences(
    input_file: str, skip_bad_lines: bool = False, skipped: Optional[List[int]] = None
) -> Tuple[int, int]:
    """Check every line (an empty or non-UTF-8 one is an error naming FILE:LINE, unless
    `skip_bad_lines`: then it is left out, its number appended to `skipped`) and count the
    sentences and their tokens."""
    sentences = tokens = 0
    for _, _, words in sentence_lines(input_file, skip_bad_lines, skipped):
        sentences += 1
        tokens += len(words)
    if sentences == 0:
        raise FormatError(f"{input_file}: no sentences")
    return sentences, tokens


def read_chunks(
    input_file: str, chunk_size: int, skip_bad_lines: bool = False
) -> Iterator[List[Tuple[int, str, List[str]]]]:
    """`(index, stripped line, tokens)` of the input's sentences, `chunk_size` at a time, in file
    order; the index is the 0-based line number (a skipped line's is not used)."""
    chunk: List[Tuple[int, str, List[str]]] = []
    for line_number, line, words in sentence_lines(input_file, skip_bad_lines):
        chunk.append((line_number - 1, line.strip(), words))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


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


def _check_run(
    input_file: str,
    output_file: str,
    chunk_size: int,
    batch_size: int,
    overwrite: bool,
    cuda_device: int,
    max_tokens: Optional[int] = None,
) -> None:
    """The checks `embed_file` and `embed_fasta` share, before any work: sizes, the output
    (a file, not there unless `overwrite`, in a writable folder, not the input) and the
    device."""
    whole_number(chunk_size, "chunk_size")
    whole_number(batch_size, "batch_size")
    whole_number(max_tokens, "max_tokens", optional=True)
    whole_number(cuda_device, "cuda_device", minimum=-1)
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f"{input_file}: no such file")
    check_output(output_file, overwrite)
    if os.path.exists(output_file) and os.path.samefile(input_file, output_file):
        raise UsageError(f"{output_file} is the input file; write the output elsewhere")
    if cuda_device >= 0 and cuda_device >= torch.cuda.device_count():
        raise UsageError(
            f"--cuda-device {cuda_device}, but this machine has {torch.cuda.device_count()} CUDA "
            "devices (-1: the CPU)"
        )


def embed_file(
    bilm: BiLm,
    input_file: str,
    output_file: str,
    layers: LayerChoice = "all",
    batch_size: int = BULK_BATCH_SIZE,
    cuda_device: int = -1,
    overwrite: bool = False,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    chunk_size: int = 10_000,
    sentence_index: bool = True,
    sentence_keys: bool = False,
    output_format: str = "hdf5",
    dtype: str = "float32",
    skip_bad_lines: bool = False,
) -> int:
    """Write `allennlp elmo`'s HDF5 layout (AllenNLP 0.9): one dataset per sentence, named by
    its 0-based line, and `sentence_to_index`, a `(1,)` string dataset holding the JSON of
    {stripped line: its last line's name}, unless not `sentence_index`; with `sentence_keys`,
    each dataset is named by its stripped line and there is no index (a repeated sentence is
    then an error, as in AllenNLP 0.9). With `output_format="parquet"`, one row per sentence
    instead (`elmo_bilm.formats.parquet`), each with its 1-based `line` (the HDF5 name is
    `line - 1`), in the order written (length-sorted within a chunk; sort by `line` for file
    order). An empty or non-UTF-8 line is an error naming FILE:LINE before any work, or with
    `skip_bad_lines` left out (the other lines keep their numbers). Returns the number of
    sentences written.

    The file appears only when complete (written to `OUTPUT.PID.partial`, then renamed); one
    that the disk's free space cannot hold is refused before any work, and a disk that fills
    up meanwhile ends the run with an error naming the output."""
    layers = file_layers(layers)
    if output_format not in FORMATS:
        raise UsageError(f"output format must be one of {FORMATS}, got {output_format!r}")
    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if output_format == "parquet" and sentence_keys:
        raise UsageError("--use-sentence-keys names HDF5 datasets; Parquet rows carry their line")
    _check_run(input_file, output_file, chunk_size, batch_size, overwrite, cuda_device, max_tokens)
    skipped: List[int] = []
    total, tokens = count_sentences(input_file, skip_bad_lines, skipped)
    if skipped:
        shown = ", ".join(f"{input_file}:{number}" for number in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        print(
            f"elmo-embed: leaving out {len(skipped)} empty or non-UTF-8 line(s): {shown}{more}",
            file=sys.stderr,
        )
    depth = layers.depth(bilm.num_layers)
    width = numpy.dtype(dtype).itemsize
    # the vectors, HDF5's few hundred bytes a dataset, and the index's JSON
    index_bytes = os.path.getsize(input_file) + 16 * total if sentence_index else 0
    check_free_space(
        output_file, width * depth * bilm.get_output_dim() * tokens + 512 * total + index_bytes
    )
    device = torch_device(cuda_device)
    bilm = bilm.to(device)
    with atomic_output(output_file, overwrite) as partial, open(partial, "w+b") as raw:
        # through a Python file object: a full disk raises OSError here, where HDF5 writing to
        # the path itself crashed (segmentation fault in its cache flush)
        if output_format == "parquet":
            sink: _Sink = _ParquetSink(raw, input_file, layers, depth, bilm, dtype)
        else:
            sink = _Hdf5Sink(raw, input_file, dtype, sentence_index, sentence_keys)
        with sink, fixed_weights(bilm):  # the run owns the biLM: its weights checked once
            progress = token_progress(tokens, "tokens")
            for chunk in read_chunks(input_file, chunk_size, skip_bad_lines):
                sink.index(chunk)
                pieces = embed_pieces(bilm, chunk, _words, batch_size, device, layers, max_tokens)
                for batch, start, host in pieces:
                    sink.write(batch, start, host)
                    progress.update(written(batch, host, _words))
            progress.close()
    return total


def _words(item: Tuple[int, str, List[str]]) -> List[str]:
    return item[2]


class _Sink:
    """Where `embed_file` writes: `index` sees each chunk in file order, `write` each batch or
    piece of a long sentence (`embed_pieces`)."""

    def __enter__(self) -> "_Sink":
        return self

    def __exit__(self, error_type: object, *exc: object) -> None:
        self.close(complete=error_type is None)

    def index(self, chunk: List[Tuple[int, str, List[str]]]) -> None:
        pass

    def write(
        self, batch: List[Tuple[int, str, List[str]]], start: int, host: numpy.ndarray
    ) -> None:
        raise NotImplementedError

    def close(self, complete: bool = True) -> None:
        """Finish the file (`complete`), or only release it after an error."""


class _Hdf5Sink(_Sink):
    """`allennlp elmo`'s layout: a dataset per sentence and the `sentence_to_index` JSON."""

    def __init__(
        self, raw: object, input_file: str, dtype: str, sentence_index: bool, sentence_keys: bool
    ) -> None:
        self.out = h5py.File(raw, "w")
        self.input_file, self.dtype = input_file, dtype
        self.sentence_index, self.sentence_keys = sentence_index, sentence_keys
        self.sentence_to_index: Dict[str, str] = {}

    def index(self, chunk: List[Tuple[int, str, List[str]]]) -> None:
        for index, line, _ in chunk:
            if self.sentence_keys and (line in (".", "..") or "/" in line):
                raise FormatError(
                    f"{self.input_file}:{index + 1}: {line[:40]!r} cannot name an HDF5 dataset "
                    "('/' separates HDF5 groups; '.' is the file itself); leave out "
                    "--use-sentence-keys (datasets are then named by line number)"
                )
            if self.sentence_keys and line in self.sentence_to_index:
                raise FormatError(
                    f"{self.input_file}:{index + 1}: repeats line "
                    f"{int(self.sentence_to_index[line]) + 1}; sentences cannot name "
                    "datasets twice (do not use sentence keys)"
                )
            if self.sentence_keys or self.sentence_index:
                self.sentence_to_index[line] = str(index)

    def write(
        self, batch: List[Tuple[int, str, List[str]]], start: int, host: numpy.ndarray
    ) -> None:
        for row, (index, line, words) in enumerate(batch):
            name = line if self.sentence_keys else str(index)
            write_rows(self.out, name, host[row], start, len(words), self.dtype)

    def close(self, complete: bool = True) -> None:
        if complete and self.sentence_index and not self.sentence_keys:
            dataset = self.out.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
            dataset[0] = json.dumps(self.sentence_to_index)
        self.out.close()


class _ParquetSink(_Sink):
    """One Parquet row per sentence, a row group per batch."""

    def __init__(
        self, raw: object, input_file: str, layers: Layers, depth: int, bilm: BiLm, dtype: str
    ) -> None:
        self.input_file = input_file
        self.writer = EmbeddingWriter(
            raw,  # type: ignore[arg-type]
            layers.name,
            depth,
            bilm.get_output_dim(),
            dtype,
            metadata=layers.metadata,
        )

    def write(
        self, batch: List[Tuple[int, str, List[str]]], start: int, host: numpy.ndarray
    ) -> None:
        n = host.shape[-2]  # a piece's tokens (a whole batch: its longest, each row cut to its own)
        self.writer.write(
            [self.input_file] * len(batch),
            [index + 1 for index, _, _ in batch],
            [words[start : start + n] for _, _, words in batch],
            host,
            start=start,
        )

    def close(self, complete: bool = True) -> None:
        self.writer.close()


def batch_layers(
    bilm: BiLm,
    sentences: Sequence[Sequence[str]],
    device: torch.device,
    layers: LayerChoice = "all",
) -> numpy.ndarray:
    """The biLM layers of one batch on the host: `(batch, n_layers, T, dim)` for "all",
    `(batch, T, width)` otherwise; one device-to-host copy per batch; the biLM frozen for the pass
    (`frozen`: eval mode, no gradient)."""
    char_ids = bilm.batch_to_ids(sentences)  # the biLM's own ids (elmo_bilm.model.manylangs)
    if device.type == "cuda":
        char_ids = char_ids.pin_memory()
    with frozen(bilm):
        activations = bilm(char_ids.to(device, non_blocking=True))["activations"]
        return Layers.of(layers).select(torch.stack(activations, dim=1)).cpu().numpy()


T = TypeVar("T")
# How items become batches: `(items, their words) -> batches`. The engine's two: `length_batches`
# (order free: a stateless biLM) and `input_order_batches` (the stateful originals' order); an
# adapter may pass its original's own (ELMoForManyLangs shuffles its length-sorted batches).
Batching = Callable[[Iterable[T], Callable[[T], Sequence[str]]], Iterable[List[T]]]


def length_batches(
    items: Iterable[T],
    words: Callable[[T], Sequence[str]],
    batch_size: int = BULK_BATCH_SIZE,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    longest_first: bool = False,
) -> Iterator[List[T]]:
    """`items` sorted by the length of their `words` (the project's one length sort; stable:
    ties keep their order; `longest_first` the longest first, as ELMoForManyLangs sorts), in
    batches of at most `batch_size` items and `max_tokens` padded tokens (rows x (the longest +
    the two boundaries)); an item longer than the budget makes a batch of its own.
    `max_tokens=None`: no token budget."""
    whole_number(batch_size, "batch_size")
    whole_number(max_tokens, "max_tokens", optional=True)
    batch: List[T] = []
    longest = 0
    for item in sorted(items, key=lambda item: len(words(item)), reverse=longest_first):
        length = len(words(item))
        padded = (len(batch) + 1) * (max(longest, length) + 2)
        if batch and (len(batch) == batch_size or (max_tokens is not None and padded > max_tokens)):
            yield batch
            batch, longest = [], 0
        batch.append(item)
        longest = max(longest, length)
    if batch:
        yield batch


def input_order_batches(
    items: Iterable[T],
    words: Callable[[T], Sequence[str]],
    batch_size: Optional[int] = None,
    max_tokens: Optional[int] = None,
) -> Iterator[List[T]]:
    """`items` in input order, cut where the stateful originals cut them (their vectors depend
    on the batches): consecutive items, at most `batch_size` a batch (AllenNLP 0.9's and
    simple_elmo's rule) and, with `max_tokens`, while a batch's tokens (without padding, as
    bio_embeddings counts residues) stay below it, an item of more than `max_tokens` alone
    (after the batch pending). Neither: one batch of everything. Lazy: `items` may be a
    stream."""
    whole_number(batch_size, "batch_size", optional=True)
    whole_number(max_tokens, "max_tokens", optional=True)
    batch: List[T] = []
    tokens = 0
    for item in items:
        length = len(words(item))
        if max_tokens is not None and length > max_tokens:
            if batch:
                yield batch
                batch, tokens = [], 0
            yield [item]
            continue
        full = batch_size is not None and len(batch) == batch_size
        if batch and (full or (max_tokens is not None and tokens + length >= max_tokens)):
            yield batch
            batch, tokens = [], 0
        batch.append(item)
        tokens += length
    if batch:
        yield batch


def sequence_pieces(
    bilm: BiLm,
    sentence: Sequence[str],
    layers: LayerChoice = "all",
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> Iterator[Tuple[int, numpy.ndarray]]:
    """One sentence longer than the token budget in exact pieces (`elmo_bilm.model.chunked`),
    from its start: `(first token's index, kept layers (1, n_layers, n, dim) for "all", else
    (1, n, width))` on the host, one device-to-host copy a piece; each piece run frozen (eval
    mode, no gradient), the caller's modes back between pieces."""
    layers = Layers.of(layers)
    pieces = chunked_layers(bilm, sentence, max_tokens)
    while True:
        with frozen(bilm):
            piece = next(pieces, None)
            if piece is None:
                return
            start, activations = piece
            host = layers.select(activations[None]).cpu().numpy()
        yield start, host


def sequence_layers(
    bilm: BiLm,
    sentence: Sequence[str],
    layers: LayerChoice = "all",
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> numpy.ndarray:
    """The kept layers of one sentence, `(n_layers, n_tokens, dim)` for "all", run in pieces of
    the token budget when longer (`batch_pieces`): the whole array and one piece in memory."""
    device = next(bilm.parameters()).device
    pieces = batch_pieces(bilm, [[sentence]], same_words, device, layers, max_tokens)
    for _, host in whole_batches(pieces, same_words):
        return host[0]
    raise AssertionError("a batch of one sentence gives one array")


def same_words(sentence: Sequence[str]) -> Sequence[str]:
    """The `words` of items that are their tokens already."""
    return sentence


def completes(
    batch: Sequence[T], start: int, host: numpy.ndarray, words: Callable[[T], Sequence[str]]
) -> bool:
    """Whether `batch_pieces`' `(batch, start, host)` finishes its batch: a whole batch, or a
    long sentence's last piece."""
    return start + host.shape[-2] >= len(words(batch[-1]))


def token_progress(total: int, unit: str) -> tqdm:
    """`elmo-embed`'s progress bar on stderr, counted in tokens (or residues), the work a
    sentence takes: a line of a million tokens moves it piece by piece, with an ETA (plain lines
    when stderr is not a terminal: `elmo_bilm.utils.progress`)."""
    return progress_bar(total=total, desc="elmo-embed", unit=f" {unit}")


def written(batch: Sequence[T], host: numpy.ndarray, words: Callable[[T], Sequence[str]]) -> int:
    """The tokens of `batch_pieces`' `(batch, start, host)`: the items' own for a whole
    batch, the piece's positions for one item (a piece of a long one, or all of it)."""
    if len(batch) == 1:
        return int(host.shape[-2])
    return sum(len(words(item)) for item in batch)


def batch_pieces(
    bilm: BiLm,
    batches: Iterable[List[T]],
    words: Callable[[T], Sequence[str]],
    device: Device = torch.device("cpu"),
    layers: LayerChoice = "all",
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    skip_lone_empty: bool = False,
) -> Iterator[Tuple[List[T], int, numpy.ndarray]]:
    """The one embedding loop of the project: `batches` run in the order given (a stateful
    biLM carries each row's states into the next batch), `(batch of items, 0, their kept layers
    on the host)` batch by batch; row `r` holds item `r`'s vectors in its first
    `len(words(item))` positions. An item alone whose tokens and two boundaries exceed
    `max_tokens` runs in pieces from its start (`sequence_pieces`): `([item], start, layers of
    its tokens start:start + n)`, so that no output holds more than the budget (`completes`
    says which is the last). `skip_lone_empty`: a batch of one empty item is not run (AllenNLP
    0.9's `ElmoEmbedder` does not run `[[]]`): its layers have no positions. `device` as
    `elmo_bilm.utils.devices` reads it ("cpu", -1, "cuda:1", a `torch.device`)."""
    layers = Layers.of(layers)
    whole_number(max_tokens, "max_tokens", optional=True)
    device = device if isinstance(device, torch.device) else torch_device(device)
    for batch in batches:
        sentence = words(batch[0])
        if skip_lone_empty and len(batch) == 1 and len(sentence) == 0:
            empty = torch.zeros(1, bilm.num_layers, 0, bilm.get_output_dim())
            yield batch, 0, layers.select(empty).numpy()
        elif len(batch) == 1 and needs_chunks(len(sentence), max_tokens):
            assert max_tokens is not None
            for start, host in sequence_pieces(bilm, sentence, layers, max_tokens):
                yield batch, start, host
        else:
            yield batch, 0, batch_layers(bilm, [words(item) for item in batch], device, layers)


def embed_pieces(
    bilm: BiLm,
    items: Sequence[T],
    words: Callable[[T], Sequence[str]],
    batch_size: int = BULK_BATCH_SIZE,
    device: torch.device = torch.device("cpu"),
    layers: LayerChoice = "all",
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
) -> Iterator[Tuple[List[T], int, numpy.ndarray]]:
    """`batch_pieces` over `length_batches`, for the outputs that write as they go (`elmo-embed`
    text and FASTA, each `elmo-embed-corpus` worker): similar lengths pad little, the biLM is
    stateless, so order is free, and the token budget bounds the memory a batch takes whatever
    the lengths."""
    batches = length_batches(items, words, batch_size, max_tokens)
    return batch_pieces(bilm, batches, words, device, layers, max_tokens)


def whole_batches(
    pieces: Iterable[Tuple[List[T], int, numpy.ndarray]], words: Callable[[T], Sequence[str]]
) -> Iterator[Tuple[List[T], numpy.ndarray]]:
    """`batch_pieces`' output for callers that keep whole arrays: `(batch of items, their kept
    layers)`, a long sentence put together from its pieces (its array and one piece in
    memory)."""
    whole: Optional[numpy.ndarray] = None
    for batch, start, host in pieces:
        if start == 0 and completes(batch, start, host, words):
            yield batch, host
            continue
        if start == 0:
            shape = host.shape[:-2] + (len(words(batch[0])), host.shape[-1])
            whole = numpy.empty(shape, host.dtype)
        assert whole is not None
        whole[..., start : start + host.shape[-2], :] = host
        if completes(batch, start, host, words):
            yield batch, whole
            whole = None


def embed_sorted(
    bilm: BiLm,
    items: Sequence[T],
    words: Callable[[T], Sequence[str]],
    batch_size: int = BULK_BATCH_SIZE,
    device: torch.device = torch.device("cpu"),
    layers: LayerChoice = "all",
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
) -> Iterator[Tuple[List[T], numpy.ndarray]]:
    """`embed_pieces` with whole arrays (`whole_batches`), for the spaCy component and the
    Section 5 features: `(batch of items, their kept layers on the host)` batch by batch."""
    pieces = embed_pieces(bilm, items, words, batch_size, device, layers, max_tokens)
    return whole_batches(pieces, words)


def sorted_batching(
    batch_size: int = BULK_BATCH_SIZE,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    chunk_size: Optional[int] = None,
) -> Batching:
    """The stateless `Batching`: `chunk_size` items at a time (default `16 * batch_size`, so
    that a stream is read in bounded pieces) in `length_batches`."""
    whole_number(batch_size, "batch_size")
    whole_number(max_tokens, "max_tokens", optional=True)
    size = whole_number(chunk_size, "chunk_size", optional=True) or 16 * int(batch_size)

    def batches(items: Iterable[T], words: Callable[[T], Sequence[str]]) -> Iterator[List[T]]:
        stream = iter(items)
        while chunk := list(itertools.islice(stream, size)):
            yield from length_batches(chunk, words, batch_size, max_tokens)

    return batches


def input_order_batching(
    batch_size: Optional[int] = None, max_tokens: Optional[int] = None
) -> Batching:
    """The stateful originals' `Batching` (`input_order_batches`)."""
    whole_number(batch_size, "batch_size", optional=True)
    whole_number(max_tokens, "max_tokens", optional=True)

    def batches(items: Iterable[T], words: Callable[[T], Sequence[str]]) -> Iterator[List[T]]:
        return input_order_batches(items, words, batch_size, max_tokens)

    return batches


def embed_each(
    bilm: BiLm,
    items: Iterable[T],
    words: Callable[[T], Sequence[str]],
    batching: Batching,
    device: Device = torch.device("cpu"),
    layers: LayerChoice = "all",
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    padded: bool = False,
    skip_lone_empty: bool = False,
) -> Iterator[numpy.ndarray]:
    """Each item's kept layers, its own array `(n_layers, n, dim)` for "all", else `(n,
    width)`, in input order, for the APIs that return one array per sentence (`ElmoEmbedder`
    and the adapters over it): the batches `batching` makes, run in the order it makes them
    (`batch_pieces`), each item given back as soon as those before it are; `padded`: up to its
    batch's longest item (the positions after its own tokens as the biLM left them);
    `skip_lone_empty` as in `batch_pieces`."""
    numbered = ((index, item) for index, item in enumerate(items))

    def numbered_words(row: Tuple[int, T]) -> Sequence[str]:
        return words(row[1])

    batches = batching(numbered, numbered_words)
    pieces = batch_pieces(
        bilm, batches, numbered_words, device, layers, max_tokens, skip_lone_empty
    )
    ready: Dict[int, numpy.ndarray] = {}
    following = 0
    for batch, host in whole_batches(pieces, numbered_words):
        for row, (index, item) in enumerate(batch):
            length = host.shape[-2] if padded else len(words(item))
            if len(batch) == 1 and needs_chunks(len(words(item)), max_tokens):
                ready[index] = host[0]  # put together from its pieces: its own array already
            else:
                ready[index] = host[row, ..., :length, :].copy()
        while following in ready:
            yield ready.pop(following)
            following += 1


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


# FASTA input (`elmo-embed proteins.fasta out.hdf5`; SeqVec's proteins, `elmo_bilm.bio_embeddings`):
# each record's residues are its tokens, and its id (the header's first word) names its dataset.
FASTA_SUFFIXES = (".fasta", ".fa", ".faa")


def is_fasta(path: str) -> bool:
    """Whether `path` is named as FASTA (`.fasta`, `.fa`, `.faa`, each maybe `.gz`)."""
    name = path.lower()
    return (name[:-3] if name.endswith(".gz") else name).endswith(FASTA_SUFFIXES)


def read_fasta(input_file: str) -> Iterator[Tuple[int, str, List[str]]]:
    """`(index, id, residues)` of each record, in file order: a `>id description` header, then
    sequence lines joined (whitespace dropped; every other character a residue, as written).
    Errors name FILE:LINE: text before the first header, a header without an id, an id that
    repeats or cannot name an HDF5 dataset (`/`), a record without residues."""
    seen: Dict[str, int] = {}
    name, header = "", 0  # the current record's id and header line (0: none yet)
    residues: List[str] = []
    for line_number, line in numbered_lines(input_file):
        if line.startswith(">"):
            if header:
                yield _fasta_record(input_file, len(seen) - 1, name, header, residues)
            fields = line[1:].split()
            name, header, residues = (fields[0] if fields else ""), line_number, []
            where = f"{input_file}:{line_number}"
            if not name or "/" in name or name == ".":
                raise FormatError(f"{where}: header {line[:40]!r}: its id cannot name a dataset")
            if name in seen:
                raise FormatError(f"{where}: id {name!r} repeats line {seen[name]}'s")
            seen[name] = line_number
        elif line.strip():
            if not header:
                raise FormatError(
                    f"{input_file}:{line_number}: sequence before the first '>' header "
                    "(FASTA: '>id' lines, each followed by its sequence)"
                )
            residues.extend("".join(line.split()))
    if header:
        yield _fasta_record(input_file, len(seen) - 1, name, header, residues)


def _fasta_record(
    input_file: str, index: int, name: str, header: int, residues: List[str]
) -> Tuple[int, str, List[str]]:
    if not residues:
        raise FormatError(f"{input_file}:{header}: record {name!r} has no residues")
    return index, name, residues


def embed_fasta(
    bilm: BiLm,
    input_file: str,
    output_file: str,
    *,
    batch_size: int,
    layers: LayerChoice = "all",
    cuda_device: int = -1,
    overwrite: bool = False,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    chunk_size: int = 10_000,
    dtype: str = "float32",
) -> int:
    """Embed each protein of a FASTA file residue by residue (each residue a token) into HDF5:
    one dataset per record named by its id, `(n_layers, n_residues, dim)` for "all", with
    attribute `original_id` (the id, which bio_embeddings' readers look up). Records are read
    `chunk_size` at a time and batched by length under the padded-token budget `max_tokens`
    (`length_batches`; a protein longer than the budget is run and written in pieces,
    `embed_pieces`). The file is
    checked whole before any work and appears only when complete, as with `embed_file`.
    Returns the number of records."""
    layers = file_layers(layers)
    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    _check_run(input_file, output_file, chunk_size, batch_size, overwrite, cuda_device, max_tokens)
    total = residues = 0
    for _, _, sequence in read_fasta(input_file):
        total, residues = total + 1, residues + len(sequence)
    if total == 0:
        raise FormatError(
            f"{input_file}: no records (FASTA: '>id' lines, each followed by its sequence)"
        )
    width = numpy.dtype(dtype).itemsize * layers.depth(bilm.num_layers) * bilm.get_output_dim()
    check_free_space(output_file, width * residues + 512 * total)
    device = torch_device(cuda_device)
    bilm = bilm.to(device)
    with atomic_output(output_file, overwrite) as partial, open(partial, "w+b") as raw:
        with h5py.File(raw, "w") as out, fixed_weights(bilm):
            progress = token_progress(residues, "residues")
            records = read_fasta(input_file)
            while chunk := list(itertools.islice(records, chunk_size)):
                for batch, start, host in embed_pieces(
                    bilm, chunk, _words, batch_size, device, layers, max_tokens
                ):
                    for row, (_, name, sequence) in enumerate(batch):
                        dataset = write_rows(out, name, host[row], start, len(sequence), dtype)
                        dataset.attrs["original_id"] = name
                    progress.update(written(batch, host, _words))
            progress.close()
    return total
