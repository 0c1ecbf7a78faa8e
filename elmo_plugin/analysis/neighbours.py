"""Table 4: the nearest contextual occurrences of a word in context, next to the nearest words by
the context-free token layer."""

from typing import Dict, List, Sequence

import numpy
import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.utils.files import UsageError
from elmo_plugin.analysis.features import token_layers


def _unit(vectors: numpy.ndarray) -> numpy.ndarray:
    return vectors / numpy.maximum(numpy.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def nearest_neighbours(
    bilm: BiLm,
    query: Sequence[str],
    index: int,
    corpus: Sequence[Sequence[str]],
    layer: int = -1,
    k: int = 5,
    batch_size: int = 64,
    device: torch.device = torch.device("cpu"),
) -> Dict:
    """The `k` corpus tokens nearest (cosine) to `query[index]` at `layer` of the biLM (every
    occurrence of every word, in its sentence), and the `k` corpus words nearest by layer 0."""
    if not 0 <= index < len(query):
        raise IndexError(f"word index {index} is outside the query's {len(query)} tokens")
    if not any(len(sentence) for sentence in corpus):
        raise UsageError("the corpus has no tokens: no neighbours to find")
    sentences = [list(query)] + [list(s) for s in corpus]
    positions = [(s, i) for s, tokens in enumerate(sentences) for i in range(len(tokens))]
    vectors = token_layers(bilm, sentences, positions, batch_size, device, "corpus layers")
    n_layers = vectors.shape[0]
    if not -n_layers <= layer < n_layers:
        raise IndexError(f"layer {layer} is out of range: the biLM has layers 0..{n_layers - 1}")
    layer = layer % n_layers
    query_row = positions.index((0, index))
    corpus_rows = [row for row, (s, _) in enumerate(positions) if s > 0]
    contextual = _unit(vectors[layer, corpus_rows]) @ _unit(vectors[layer, query_row])
    top = numpy.argsort(-contextual)[:k]
    neighbours: List[Dict] = []
    for rank in top:
        s, i = positions[corpus_rows[rank]]
        neighbours.append(
            {
                "word": sentences[s][i],
                "sentence": " ".join(sentences[s]),
                "sentence_index": s - 1,
                "token_index": i,
                "cosine": float(contextual[rank]),
            }
        )
    # context-free: one vector per distinct corpus word (layer 0 does not depend on context)
    words: Dict[str, int] = {}
    for row in corpus_rows:
        s, i = positions[row]
        words.setdefault(sentences[s][i], row)
    word_list = [w for w in words if w != query[index]]
    word_vectors = _unit(vectors[0, [words[w] for w in word_list]])
    free = word_vectors @ _unit(vectors[0, query_row])
    return {
        "query": " ".join(query),
        "word": query[index],
        "layer": layer,
        "contextual_neighbours": neighbours,
        "token_layer_neighbours": [
            {"word": word_list[r], "cosine": float(free[r])} for r in numpy.argsort(-free)[:k]
        ],
    }
