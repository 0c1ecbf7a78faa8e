"""Per-layer biLM vectors of given tokens, for the probes and neighbour search."""

from typing import List, Sequence, Tuple

import numpy
import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.runtime.engine import embed_sorted
from elmo_bilm.utils.progress import progress_bar


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
    out = None
    progress = progress_bar(total=len(needed), desc=desc, unit=" sentences")
    bilm = bilm.to(device)
    for batch, host in embed_sorted(bilm, needed, sentences.__getitem__, batch_size, device):
        if out is None:  # host: (batch, n_layers, T, dim)
            out = numpy.zeros((host.shape[1], len(positions), host.shape[-1]), dtype=numpy.float32)
        for sentence_row, sentence in enumerate(batch):
            for row, index in wanted[sentence]:
                out[:, row] = host[sentence_row, :, index]
        progress.update(len(batch))
    progress.close()
    assert out is not None, "no positions"
    return out
