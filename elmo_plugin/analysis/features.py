"""Per-layer biLM vectors of given tokens, for the probes and neighbour search."""

from typing import List, Sequence, Tuple

import numpy
import torch
from tqdm import tqdm

from elmo_bilm.bilm import BiLm
from elmo_bilm.bulk import sentence_layers


def token_layers(
    bilm: BiLm,
    sentences: Sequence[Sequence[str]],
    positions: Sequence[Tuple[int, int]],
    batch_size: int = 64,
    device: torch.device = torch.device("cpu"),
    desc: str = "biLM layers",
) -> numpy.ndarray:
    """`(n_layers, len(positions), dim)` float32: the vectors of token `(sentence, index)` of each
    position (layer 0 = the token layer, then each LSTM layer)."""
    wanted: List[List[Tuple[int, int]]] = [[] for _ in sentences]
    for row, (sentence, index) in enumerate(positions):
        if not 0 <= index < len(sentences[sentence]):
            raise IndexError(f"token {index} of sentence {sentence} is out of range")
        wanted[sentence].append((row, index))
    needed = sorted({s for s, _ in positions})
    subset = [sentences[s] for s in needed]
    out = None
    for local, layers in tqdm(
        sentence_layers(bilm, subset, batch_size, device),
        total=len(subset),
        desc=desc,
        unit=" sentences",
    ):
        if out is None:
            out = numpy.zeros(
                (layers.shape[0], len(positions), layers.shape[-1]), dtype=numpy.float32
            )
        for row, index in wanted[needed[local]]:
            out[:, row] = layers[:, index]
    assert out is not None, "no positions"
    return out
