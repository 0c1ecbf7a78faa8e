"""Serve ELMo with onnxruntime alone (no torch): `python serve_onnx.py bilm.onnx`, where
`bilm.onnx` comes from `elmo-export-onnx bilm.onnx`. Prints each layer's vector shapes."""

import sys
from typing import List, Sequence

import numpy
import onnxruntime

MAX_CHARS = 50  # characters per token, as `batch_to_ids` makes them
BOW, EOW, PAD = 258, 259, 260  # begin-of-word, end-of-word and padding characters (before +1)


def char_ids(sentences: Sequence[Sequence[str]]) -> numpy.ndarray:
    """`batch_to_ids` in numpy: (batch, longest, 50) int64, 0 for padded tokens."""
    longest = max(map(len, sentences), default=0)
    ids = numpy.zeros((len(sentences), longest, MAX_CHARS), dtype=numpy.int64)
    for row, sentence in enumerate(sentences):
        for column, word in enumerate(sentence):
            chars = [BOW, *word.encode("utf-8", "ignore")[: MAX_CHARS - 2], EOW]
            ids[row, column] = numpy.array(chars + [PAD] * (MAX_CHARS - len(chars))) + 1
    return ids


def embed(session: onnxruntime.InferenceSession, sentences: List[List[str]]) -> numpy.ndarray:
    """(layers, batch, tokens, dim) float32: layer 0 the char CNN, then each LSTM layer."""
    layers, _mask = session.run(None, {"char_ids": char_ids(sentences)})
    return layers


if __name__ == "__main__":
    session = onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
    vectors = embed(session, [["ELMo", "runs", "without", "torch", "."], ["Hello", "!"]])
    print(vectors.shape)
