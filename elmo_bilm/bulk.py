"""Embedding a file of sentences in bulk: read in chunks, batched by length, every biLM layer
written to HDF5 in the layout of AllenNLP 0.9's `allennlp elmo` (the library behind the
`elmo-embed` command and `ElmoEmbedder.embed_file`).

Memory is bounded by the chunk size, not by the input: sentences are read in chunks, sorted by
length within a chunk (similar lengths batch well; the biLM is stateless, so order is free) and
written as they are embedded.
"""

import errno
import json
import os
import shutil
import sys
from typing import Dict, Iterator, List, Sequence, Tuple

import h5py
import numpy
import torch
from tqdm import tqdm

from elmo_bilm.bilm import BiLm
from elmo_bilm.characters import batch_char_ids
from elmo_bilm.files import FormatError, atomic_output, numbered_lines

LAYER_CHOICES = ("all", "top", "average")
# Sentences are length-sorted, so a batch pads little; at the paper size 128 rows per recurrent
# step cut the biLM time by 10% against 64 (each step streams 40 MB of weights whatever the rows).
DEFAULT_BATCH_SIZE = 128


def count_sentences(input_file: str) -> Tuple[int, int]:
    """Check every line (an empty one is an error naming FILE:LINE) and count the sentences and
    their tokens."""
    sentences = tokens = 0
    for line_number, line in numbered_lines(input_file):
        words = len(line.split())
        if not words:
            raise FormatError(
                f"{input_file}:{line_number}: empty line; elmo-embed needs one "
                "whitespace-tokenised sentence per line"
            )
        sentences += 1
        tokens += words
    if sentences == 0:
        raise FormatError(f"{input_file}: no sentences")
    return sentences, tokens


def read_chunks(input_file: str, chunk_size: int) -> Iterator[List[Tuple[int, str, List[str]]]]:
    """`(index, stripped line, tokens)` of the input's sentences, `chunk_size` at a time, in file
    order."""
    chunk: List[Tuple[int, str, List[str]]] = []
    for line_number, line in numbered_lines(input_file):
        chunk.append((line_number - 1, line.strip(), line.split()))
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


def embed_file(
    bilm: BiLm,
    input_file: str,
    output_file: str,
    layers: str = "all",
    batch_size: int = DEFAULT_BATCH_SIZE,
    cuda_device: int = -1,
    overwrite: bool = False,
    chunk_size: int = 10_000,
    sentence_index: bool = True,
    sentence_keys: bool = False,
) -> int:
    """Write `allennlp elmo`'s HDF5 layout (AllenNLP 0.9): one float32 dataset per sentence,
    named by its 0-based line, and `sentence_to_index`, a `(1,)` string dataset holding the JSON
    of {stripped line: its last line's name}, unless not `sentence_index`; with `sentence_keys`,
    each dataset is named by its stripped line and there is no index (a repeated sentence is
    then an error, as in AllenNLP 0.9). Returns the number of sentences.

    The file appears only when complete (written to `OUTPUT.PID.partial`, then renamed); one
    that the disk's free space cannot hold is refused before any work, and a disk that fills
    up meanwhile ends the run with an error naming the output."""
    if layers not in LAYER_CHOICES:
        raise ValueError(f"layers must be one of {LAYER_CHOICES}, got {layers!r}")
    if chunk_size < 1 or batch_size < 1:
        raise ValueError("chunk_size and batch_size must be at least 1")
    if os.path.exists(output_file) and not overwrite:
        raise FileExistsError(f"{output_file} exists; pass --overwrite to replace it")
    if os.path.exists(output_file) and os.path.samefile(input_file, output_file):
        raise ValueError(f"{output_file} is the input file; write the output elsewhere")
    if cuda_device >= 0 and cuda_device >= torch.cuda.device_count():
        raise ValueError(
            f"--cuda-device {cuda_device}, but this machine has {torch.cuda.device_count()} CUDA "
            "devices (-1: the CPU)"
        )
    total, tokens = count_sentences(input_file)
    depth = bilm.num_layers if layers == "all" else 1
    # the vectors, HDF5's few hundred bytes a dataset, and the index's JSON
    index_bytes = os.path.getsize(input_file) + 16 * total if sentence_index else 0
    check_free_space(
        output_file, 4 * depth * bilm.get_output_dim() * tokens + 512 * total + index_bytes
    )
    device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
    bilm = bilm.to(device).eval()
    sentence_to_index: Dict[str, str] = {}
    with atomic_output(output_file, overwrite) as partial, open(partial, "w+b") as raw:
        # through a Python file object: a full disk raises OSError here, where HDF5 writing to
        # the path itself crashed (segmentation fault in its cache flush)
        with h5py.File(raw, "w") as out, torch.no_grad():
            progress = tqdm(total=total, desc="elmo-embed", unit=" sentences", file=sys.stderr)
            for chunk in read_chunks(input_file, chunk_size):
                for index, line, _ in chunk:
                    if sentence_keys and line in sentence_to_index:
                        raise FormatError(
                            f"{input_file}:{index + 1}: repeats line "
                            f"{int(sentence_to_index[line]) + 1}; sentences cannot name "
                            "datasets twice (do not use sentence keys)"
                        )
                    if sentence_keys or sentence_index:
                        sentence_to_index[line] = str(index)
                chunk.sort(key=lambda item: len(item[2]))
                for start in range(0, len(chunk), batch_size):
                    batch = chunk[start : start + batch_size]
                    host = batch_layers(bilm, [tokens for _, _, tokens in batch], device, layers)
                    for row, (index, line, words) in enumerate(batch):
                        name = line if sentence_keys else str(index)
                        out.create_dataset(name, data=host[row, ..., : len(words), :])
                    progress.update(len(batch))
            progress.close()
            if sentence_index and not sentence_keys:
                dataset = out.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
                dataset[0] = json.dumps(sentence_to_index)
    return total


def batch_layers(
    bilm: BiLm, sentences: Sequence[Sequence[str]], device: torch.device, layers: str = "all"
) -> numpy.ndarray:
    """The biLM layers of one batch on the host: `(batch, n_layers, T, dim)` for "all",
    `(batch, T, dim)` for "top" / "average"; one device-to-host copy per batch."""
    char_ids = batch_char_ids(sentences)
    if device.type == "cuda":
        char_ids = char_ids.pin_memory()
    activations = torch.stack(bilm(char_ids.to(device, non_blocking=True))["activations"], dim=1)
    if layers == "top":
        activations = activations[:, -1]
    elif layers == "average":
        activations = activations.mean(dim=1)
    return activations.cpu().numpy()


def sentence_layers(
    bilm: BiLm,
    sentences: Sequence[Sequence[str]],
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: torch.device = torch.device("cpu"),
    layers: str = "all",
) -> Iterator[Tuple[int, numpy.ndarray]]:
    """`(index, layers of sentence index)` for every sentence, batched by length (in that order,
    not the input's); eval mode, no gradient."""
    bilm = bilm.to(device).eval()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            host = batch_layers(bilm, [sentences[i] for i in batch], device, layers)
            for row, index in enumerate(batch):
                yield index, host[row, ..., : len(sentences[index]), :]
