"""The one embedding loop: batches (`elmo_bilm.runtime.batching`) run through the biLM, a
sentence longer than the token budget in pieces (`elmo_bilm.model.chunked`), and the bulk runs
behind `elmo-embed`, `ElmoEmbedder.embed_file` and `elmo-embed-corpus`: items read by
`elmo_bilm.formats` (text lines, FASTA) in chunks, sorted by length within a chunk (the biLM is
stateless, so order is free) and written as they are embedded through a `Sink` (the HDF5 layout
of AllenNLP 0.9's `allennlp elmo`, or Parquet), a long sentence a piece at a time, so that
memory is set by the chunk size and `max_tokens`, not by the input.
"""

import itertools
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch
from tqdm import tqdm

from elmo_bilm.formats.fasta import is_fasta, read_fasta  # noqa: F401 (moved)
from elmo_bilm.formats.hdf5 import Hdf5Sink
from elmo_bilm.formats.parquet import DTYPES, ParquetSink
from elmo_bilm.formats.sink import (
    Item,
    Output,
    ReducingSink,
    Sink,
    check_free_space,
    check_reduction,
    check_run,
    write_chunks,
)
from elmo_bilm.formats.text import (  # noqa: F401 (moved: the text reader's home is formats/)
    Source,
    count_sentences,
    is_stream,
    line_words,
    report_skipped,
    sentence_lines,
    source_name,
)
from elmo_bilm.model.bilm import BiLm, frozen
from elmo_bilm.model.chunked import chunked_layers, needs_chunks
from elmo_bilm.model.derived import fixed_weights
from elmo_bilm.runtime.batching import (  # noqa: F401 (the batching rules' home)
    BULK_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    Batching,
    T,
    input_order_batches,
    input_order_batching,
    length_batches,
    sorted_batching,
)
from elmo_bilm.runtime.layers import LAYER_CHOICES, LayerChoice, Layers
from elmo_bilm.utils.checks import whole_number
from elmo_bilm.utils.devices import Device, torch_device
from elmo_bilm.utils.files import FormatError, UsageError
from elmo_bilm.utils.progress import progress_bar

FORMATS = ("hdf5", "parquet")


def file_layers(layers: LayerChoice) -> Layers:
    """`layers` for an output file (HDF5 or Parquet): every layer, the top one, their average or
    a fixed mix; a choice of one vector per token of another width is refused."""
    layers = Layers.of(layers)
    if layers.name not in (*LAYER_CHOICES, "mix"):
        raise UsageError(f"an output file keeps layers {LAYER_CHOICES} or a mix, got {layers}")
    return layers


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


def token_progress(total: Optional[int], unit: str) -> tqdm:
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


def _words(item: Item) -> List[str]:
    return item[2]


def _embed_into(
    bilm: BiLm,
    input_file: Source,
    output_file: Output,
    items: Callable[[bool], Iterator[Item]],
    make_sink: Callable[[Any, int], Sink],
    layers: Layers,
    options: Dict[str, Any],
    unit: str,
    empty: str,
    index_bytes: Callable[[int], int] = lambda total: 0,
    reduce: Optional[str] = None,
) -> int:
    """`embed_file` and `embed_fasta`'s run: the checks (`check_run` of `options`: their
    keywords); a file's `items(True)`
    checked and counted before any work, for the bar and the disk's free space (a stream,
    `is_stream`, is read once: checked as it is read, a bar without a total); then `items(False)`
    `chunk_size` at a time through `embed_pieces` into `make_sink(raw, depth)` (`write_chunks`),
    through a `ReducingSink` with `reduce` (one vector per item). Returns the
    number of items."""
    dtype, overwrite, cuda_device = (
        options.pop("dtype"),
        options.pop("overwrite"),
        options.pop("cuda_device"),
    )
    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if reduce is not None:
        check_reduction(reduce)
    check_run(input_file, output_file, overwrite, cuda_device, **options)
    depth, tokens = layers.depth(bilm.num_layers), None
    if not is_stream(input_file):  # a file's items checked and counted before any work
        total = tokens = 0
        for _, _, words in items(True):
            total, tokens = total + 1, tokens + len(words)
        if total == 0:
            raise FormatError(empty)
        width = numpy.dtype(dtype).itemsize * depth * bilm.get_output_dim()
        if isinstance(output_file, str):
            vectors = total if reduce else tokens
            check_free_space(output_file, width * vectors + 512 * total + index_bytes(total))
    device = torch_device(cuda_device)
    bilm = bilm.to(device)

    def pieces(chunk: List[Item]) -> Iterator[Tuple[List[Item], int, numpy.ndarray]]:
        size, budget = options["batch_size"], options["max_tokens"]
        return embed_pieces(bilm, chunk, _words, size, device, layers, budget)

    stream = items(False)
    chunks = iter(lambda: list(itertools.islice(stream, options["chunk_size"])), [])
    bars: List[tqdm] = []

    def sink(raw: Any) -> Sink:
        bars.append(token_progress(tokens, unit))  # once the output is claimed
        made = make_sink(raw, depth)
        return made if reduce is None else ReducingSink(made, reduce)

    def update(batch: List[Item], host: numpy.ndarray) -> None:
        bars[0].update(written(batch, host, _words))

    try:
        with fixed_weights(bilm):  # the run owns the biLM: its weights checked once
            count = write_chunks(output_file, overwrite, sink, chunks, pieces, update, empty)
    finally:  # an error then starts a line of its own
        for bar in bars:
            bar.close()
    return count


def embed_file(
    bilm: BiLm,
    input_file: Source,
    output_file: Output,
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
    reduce: Optional[str] = None,
) -> int:
    """Write `allennlp elmo`'s HDF5 layout (AllenNLP 0.9; `elmo_bilm.formats.hdf5`): one dataset
    per sentence, named by its 0-based line, and `sentence_to_index` unless not `sentence_index`;
    with `sentence_keys`, each dataset is named by its stripped line and there is no index (a
    repeated sentence is then an error, as in AllenNLP 0.9). With `output_format="parquet"`, one
    row per sentence instead (`elmo_bilm.formats.parquet`), each with its 1-based `line`, in the
    order written (length-sorted within a chunk). `input_file`: a path, a pipe or `/dev/stdin`,
    or an open file object (`elmo_bilm.formats.text`). An empty or non-UTF-8 line is an error
    naming FILE:LINE before any work (a stream's when it is read), or with `skip_bad_lines` left
    out (the other lines keep their numbers). `reduce` (`elmo_bilm.formats.sink.REDUCTIONS`): one vector per sentence,
    the mean over its tokens of the kept layers (`"unit-mean"`: scaled to unit length), each
    dataset or row then `(dim,)`, or `(n_layers, dim)` for "all". Returns the number of
    sentences written.

    The file appears only when complete (written to `OUTPUT.PID.partial`, then renamed); one
    that the disk's free space cannot hold is refused before any work (a file's, not a
    stream's), and a disk that fills up meanwhile ends the run with an error naming the output."""
    layers = file_layers(layers)
    if output_format not in FORMATS:
        raise UsageError(f"output format must be one of {FORMATS}, got {output_format!r}")
    if output_format == "parquet" and sentence_keys:
        raise UsageError("--use-sentence-keys names HDF5 datasets; Parquet rows carry their line")
    name, skipped = source_name(input_file), []  # type: Tuple[str, List[int]]

    def items(counting: bool) -> Iterator[Item]:
        noted = counting or is_stream(input_file)  # the one pass that notes the lines left out
        for number, line, words in sentence_lines(
            input_file, skip_bad_lines, skipped if noted else None
        ):
            yield number - 1, line.strip(), words
        if noted:
            report_skipped(name, skipped)

    def make_sink(raw: Any, depth: int) -> Sink:
        if output_format == "parquet":
            dim, metadata = bilm.get_output_dim(), layers.metadata
            return ParquetSink(raw, name, layers.name, depth, dim, dtype, metadata, reduce)
        return Hdf5Sink(raw, name, dtype, sentence_index, sentence_keys, reduced=bool(reduce))

    def index_bytes(total: int) -> int:  # the index's JSON: the lines and their names
        return os.path.getsize(input_file) + 16 * total if sentence_index else 0  # type: ignore

    options: Dict[str, Any] = dict(chunk_size=chunk_size, batch_size=batch_size, dtype=dtype)
    options.update(max_tokens=max_tokens, overwrite=overwrite, cuda_device=cuda_device)
    run = (items, make_sink, layers, options, "tokens", f"{name}: no sentences", index_bytes)
    return _embed_into(bilm, input_file, output_file, *run, reduce)


def embed_fasta(
    bilm: BiLm,
    input_file: Source,
    output_file: Output,
    *,
    batch_size: int,
    layers: LayerChoice = "all",
    cuda_device: int = -1,
    overwrite: bool = False,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    chunk_size: int = 10_000,
    dtype: str = "float32",
    reduce: Optional[str] = None,
) -> int:
    """Embed each protein of a FASTA file or stream (`elmo_bilm.formats.fasta`) residue by
    residue into HDF5: one dataset per record named by its id, `(n_layers, n_residues, dim)` for
    "all", with attribute `original_id` (the id, which bio_embeddings' readers look up); batched
    by length under `max_tokens` (`embed_pieces`), checked and written as `embed_file`, `reduce`
    too (one vector per protein: `"mean"` with the layers summed, `layers=Layers(mix=(0, 0, 0),
    gamma=3)`, is bio_embeddings' `reduce_per_protein`). Returns the number of records."""
    name = source_name(input_file)

    def make_sink(raw: Any, depth: int) -> Sink:
        return Hdf5Sink(raw, name, dtype, False, True, original_id=True, reduced=bool(reduce))

    options: Dict[str, Any] = dict(chunk_size=chunk_size, batch_size=batch_size, dtype=dtype)
    options.update(max_tokens=max_tokens, overwrite=overwrite, cuda_device=cuda_device)
    empty = f"{name}: no records (FASTA: '>id' lines, each followed by its sequence)"
    run = (lambda _: read_fasta(input_file), make_sink, file_layers(layers), options)
    return _embed_into(bilm, input_file, output_file, *run, "residues", empty, reduce=reduce)
