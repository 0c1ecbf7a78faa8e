"""`allennlp elmo-embed`: write the biLM layers of every sentence of a text file to HDF5.

The `allennlp elmo` command that AllenNLP 1.0 dropped, with bilm-tf's `dump_bilm_embeddings` layout.
"""

import argparse
import json
import logging
import os
from typing import List

import h5py
import torch
from allennlp.commands.subcommand import Subcommand
from allennlp.common import Tqdm
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm.bilm import BiLm
from elmo_bilm.files import atomic_output
from elmo_plugin.modules.bilm_loading import load_bilm

logger = logging.getLogger(__name__)

LAYER_CHOICES = ("all", "top", "average")


def read_sentences(input_file: str) -> List[List[str]]:
    """One whitespace-tokenised sentence per line; an empty line is an error naming its number."""
    sentences = []
    with open(input_file, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            tokens = line.split()
            if not tokens:
                raise ValueError(
                    f"{input_file}:{line_number}: empty line; elmo-embed needs one "
                    "whitespace-tokenised sentence per line"
                )
            sentences.append(tokens)
    if not sentences:
        raise ValueError(f"{input_file}: no sentences")
    return sentences


def embed_sentences(
    bilm: BiLm,
    sentences: List[List[str]],
    output_file: str,
    layers: str = "all",
    batch_size: int = 64,
    cuda_device: int = -1,
    overwrite: bool = False,
) -> None:
    """Write one dataset per sentence (named by its 0-based index) plus `sentence_to_index`.

    Shapes: `(n_layers, n_tokens, dim)` for `layers="all"`, `(n_tokens, dim)` for `"top"` and
    `"average"`. The file appears only when complete (written to `OUTPUT.partial`, then renamed).
    """
    if layers not in LAYER_CHOICES:
        raise ValueError(f"layers must be one of {LAYER_CHOICES}, got {layers!r}")
    if os.path.exists(output_file) and not overwrite:
        raise FileExistsError(f"{output_file} exists; pass --overwrite to replace it")
    device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
    bilm = bilm.to(device).eval()
    # Batch sentences of similar length together; the biLM is stateless, so order is free.
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    with atomic_output(output_file, overwrite) as partial:
        with h5py.File(partial, "w") as out, torch.no_grad():
            for batch in Tqdm.tqdm(batches, desc="elmo-embed", unit="batch"):
                char_ids = batch_to_ids([sentences[i] for i in batch]).to(device)
                activations = torch.stack(bilm(char_ids)["activations"], dim=1)
                for row, index in enumerate(batch):
                    vectors = activations[row, :, : len(sentences[index])]
                    if layers == "top":
                        vectors = vectors[-1]
                    elif layers == "average":
                        vectors = vectors.mean(dim=0)
                    out.create_dataset(str(index), data=vectors.cpu().numpy())
            sentence_to_index = {" ".join(tokens): str(i) for i, tokens in enumerate(sentences)}
            out.create_dataset("sentence_to_index", data=json.dumps(sentence_to_index))


@Subcommand.register("elmo-embed")
class ElmoEmbed(Subcommand):
    """Embed a file of sentences with a biLM and write the layers to HDF5.

    Registered as a `Subcommand` with name "elmo-embed".
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Write the ELMo biLM layers of every line of INPUT (one whitespace-tokenised sentence per "
            "line) to OUTPUT.hdf5: one dataset per line named by its 0-based line number, shape "
            "(n_layers, n_tokens, dim) with --layers all, (n_tokens, dim) otherwise, and a "
            "'sentence_to_index' JSON string."
        )
        subparser = parser.add_parser(
            self.name, description=description, help="Embed sentences with ELMo."
        )
        subparser.add_argument("input_file", help="text file, one tokenised sentence per line")
        subparser.add_argument("output_file", help="HDF5 file to write")
        subparser.add_argument("--options-file", help="bilm-tf options.json (with --weight-file)")
        subparser.add_argument("--weight-file", help="bilm-tf weights.hdf5")
        subparser.add_argument(
            "--archive-file",
            help="an elmo_plugin_bilm model.tar.gz instead; with none, the shipped small biLM",
        )
        subparser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
        subparser.add_argument("--cuda-device", type=int, default=-1, help="GPU id, -1 for CPU")
        subparser.add_argument(
            "--layers", choices=LAYER_CHOICES, default="all", help="which layers to write"
        )
        subparser.add_argument(
            "--overwrite", action="store_true", help="replace OUTPUT if it exists"
        )
        subparser.set_defaults(func=_run)
        return subparser


def _run(args: argparse.Namespace) -> None:
    sentences = read_sentences(args.input_file)
    bilm = load_bilm(args.options_file, args.weight_file, args.archive_file)
    embed_sentences(
        bilm,
        sentences,
        args.output_file,
        layers=args.layers,
        batch_size=args.batch_size,
        cuda_device=args.cuda_device,
        overwrite=args.overwrite,
    )
    logger.info("Wrote %d sentences to %s", len(sentences), args.output_file)
