"""`elmo-embed`: write the biLM layers of every sentence of a text file to HDF5, in bilm-tf's
`dump_bilm_embeddings` layout. Needs only torch, h5py and numpy (no AllenNLP), so it starts in a
second or two; `allennlp elmo-embed` runs the same code.

Memory is bounded by `--chunk-size`, not by the input: sentences are read in chunks, sorted by
length within a chunk (similar lengths batch well; the biLM is stateless, so order is free) and
written as they are embedded.
"""

import argparse
import json
import logging
import os
import sys
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import h5py
import numpy
import torch
from tqdm import tqdm

from elmo_bilm.bilm import BiLm
from elmo_bilm.characters import batch_char_ids
from elmo_bilm.files import USER_ERRORS, FormatError, atomic_output, numbered_lines
from elmo_bilm.loading import add_bilm_arguments, load_bilm

logger = logging.getLogger(__name__)

LAYER_CHOICES = ("all", "top", "average")
# Sentences are length-sorted, so a batch pads little; at the paper size 128 rows per recurrent
# step cut the biLM time by 10% against 64 (each step streams 40 MB of weights whatever the rows).
DEFAULT_BATCH_SIZE = 128
DESCRIPTION = (
    "Write the ELMo biLM layers of every line of INPUT (one whitespace-tokenised sentence per line) "
    "to OUTPUT.hdf5: one dataset per line named by its 0-based line number, shape "
    "(n_layers, n_tokens, dim) with --layers all, (n_tokens, dim) otherwise, and a "
    "'sentence_to_index' JSON string."
)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of `elmo-embed` (the console script and the `allennlp` subcommand)."""
    parser.add_argument("input_file", help="text file, one tokenised sentence per line")
    parser.add_argument("output_file", help="HDF5 file to write")
    add_bilm_arguments(parser, DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "--layers", choices=LAYER_CHOICES, default="all", help="which layers to write"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=10_000,
        help="sentences read and length-sorted at a time (bounds memory; output is the same)",
    )
    return parser


def count_sentences(input_file: str) -> int:
    """Check every line (an empty one is an error naming FILE:LINE) and count them."""
    count = 0
    for line_number, line in numbered_lines(input_file):
        if not line.split():
            raise FormatError(
                f"{input_file}:{line_number}: empty line; elmo-embed needs one "
                "whitespace-tokenised sentence per line"
            )
        count += 1
    if count == 0:
        raise FormatError(f"{input_file}: no sentences")
    return count


def read_chunks(input_file: str, chunk_size: int) -> Iterator[List[Tuple[int, List[str]]]]:
    """`(index, tokens)` of the input's sentences, `chunk_size` at a time, in file order."""
    chunk: List[Tuple[int, List[str]]] = []
    for line_number, line in numbered_lines(input_file):
        chunk.append((line_number - 1, line.split()))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


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
    """Write one dataset per sentence, named by its 0-based line, plus `sentence_to_index` (the
    last line of each distinct sentence) unless not `sentence_index`; with `sentence_keys`, each
    dataset is named by the sentence itself and there is no index (a repeated sentence is then an
    error, as in AllenNLP 0.9). Returns the number of sentences. The file appears only when
    complete (written to `OUTPUT.partial`, then renamed)."""
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
    total = count_sentences(input_file)
    device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
    bilm = bilm.to(device).eval()
    sentence_to_index: Dict[str, str] = {}
    with atomic_output(output_file, overwrite) as partial:
        with h5py.File(partial, "w") as out, torch.no_grad():
            progress = tqdm(total=total, desc="elmo-embed", unit=" sentences", file=sys.stderr)
            for chunk in read_chunks(input_file, chunk_size):
                for index, tokens in chunk:
                    key = " ".join(tokens)
                    if sentence_keys and key in sentence_to_index:
                        raise FormatError(
                            f"{input_file}:{index + 1}: repeats line {int(sentence_to_index[key]) + 1}; "
                            "sentences cannot name datasets twice (do not use sentence keys)"
                        )
                    sentence_to_index[key] = str(index)
                chunk.sort(key=lambda item: len(item[1]))
                for start in range(0, len(chunk), batch_size):
                    batch = chunk[start : start + batch_size]
                    _write_batch(out, bilm, batch, layers, device, sentence_keys)
                    progress.update(len(batch))
            progress.close()
            if sentence_index and not sentence_keys:
                out.create_dataset("sentence_to_index", data=json.dumps(sentence_to_index))
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


def _write_batch(
    out: h5py.File,
    bilm: BiLm,
    batch: Sequence[Tuple[int, List[str]]],
    layers: str,
    device: torch.device,
    sentence_keys: bool = False,
) -> None:
    host = batch_layers(bilm, [tokens for _, tokens in batch], device, layers)
    for row, (index, tokens) in enumerate(batch):
        name = " ".join(tokens) if sentence_keys else str(index)
        out.create_dataset(name, data=host[row, ..., : len(tokens), :])


def run(args: argparse.Namespace, bilm: Optional[BiLm] = None) -> None:
    """Embed as the parsed arguments say, with `bilm` or the one they name."""
    bilm = bilm or load_bilm(args.options_file, args.weight_file)
    count = embed_file(
        bilm,
        args.input_file,
        args.output_file,
        layers=args.layers,
        batch_size=args.batch_size,
        cuda_device=args.cuda_device,
        overwrite=args.overwrite,
        chunk_size=args.chunk_size,
    )
    logger.info("Wrote %d sentences to %s", count, args.output_file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-embed` console script."""
    parser = add_arguments(argparse.ArgumentParser(prog="elmo-embed", description=DESCRIPTION))
    # accepted out of habit from `allennlp elmo-embed ... --include-package elmo_plugin`; unused
    parser.add_argument("--include-package", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        run(args)
    except USER_ERRORS as error:
        print(f"elmo-embed: error: {error}", file=sys.stderr)
        return 1
    return 0


def console() -> None:
    """The installed `elmo-embed` script: `main`, then exit without the interpreter's teardown of
    torch's modules (0.5 s here, a tenth of a short run). By then the output is closed and renamed
    and the logs flushed, so nothing is lost."""
    status = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
