"""Context-free word vectors for the Table 1 baselines: word2vec on the biLM's own corpus.

The paper's baselines start from GloVe (Senna for NER), which cannot be downloaded here. Vectors
trained on the same tokenised Wikipedia the shipped biLM read make the comparison the paper's:
ELMo against context-free vectors of the same text, i.e. what context adds. gensim's word2vec
(skip-gram, negative sampling) streams the corpus from disk on every pass, so memory is bounded by
the vocabulary (`max_vocab`), not the corpus; one worker with a fixed seed and a fixed string hash
makes the output reproducible byte for byte.
"""

import gzip
import logging
import zlib
from typing import Iterator, List, Optional, Sequence

from elmo_bilm.files import FormatError, atomic_output, numbered_lines

logger = logging.getLogger(__name__)


class TokenisedCorpus:
    """The sentences of one-sentence-per-line files (plain or gzip), re-read on every iteration
    (word2vec passes once to count and once per epoch); optionally lowercased."""

    def __init__(self, paths: Sequence[str], lowercase: bool = False) -> None:
        self.paths = list(paths)
        self.lowercase = lowercase

    def __iter__(self) -> Iterator[List[str]]:
        for path in self.paths:
            for _, line in numbered_lines(path):
                line = line.lower() if self.lowercase else line
                tokens = line.split()
                if tokens:
                    yield tokens


def _crc32_hash(text: str) -> int:
    """A string hash that is the same in every process (Python's `hash` is salted per process)."""
    return zlib.crc32(text.encode("utf-8"))


def train_word_vectors(
    corpus: Sequence[str],
    output: str,
    dim: int = 300,
    lowercase: bool = False,
    window: int = 5,
    min_count: int = 5,
    max_vocab: Optional[int] = 200_000,
    epochs: int = 5,
    workers: int = 1,
    seed: int = 1,
    overwrite: bool = False,
) -> int:
    """Train skip-gram vectors on the `corpus` files and write `output` in GloVe's text format
    (`word v1 ... vd` a line, no header; gzip when `output` ends in `.gz`), the format AllenNLP's
    `Embedding(pretrained_file=...)` reads. Returns the number of words written."""
    from gensim.models import Word2Vec  # an optional dependency of this one command

    if dim < 1 or epochs < 1 or min_count < 1 or (max_vocab is not None and max_vocab < 1):
        raise ValueError("dim, epochs, min_count and max_vocab must be positive")
    sentences = TokenisedCorpus(corpus, lowercase)
    with atomic_output(output, overwrite) as partial:  # fail on an existing output before training
        model = Word2Vec(
            vector_size=dim,
            window=window,
            min_count=min_count,
            max_final_vocab=max_vocab,
            sg=1,
            negative=5,
            workers=workers,
            seed=seed,
            hashfxn=_crc32_hash,
        )
        model.build_vocab(sentences, progress_per=1_000_000)
        words = model.wv.index_to_key
        if not words:
            raise FormatError(
                f"{', '.join(corpus)}: no word occurs {min_count} times; nothing to train"
            )
        model.train(
            sentences,
            total_examples=model.corpus_count,
            epochs=epochs,
            report_delay=30.0,
        )
        opener = gzip.open if output.endswith(".gz") else open
        with opener(partial, "wt", encoding="utf-8") as handle:
            for word in words:
                vector = " ".join(f"{value:.5f}" for value in model.wv[word])
                handle.write(f"{word} {vector}\n")
    logger.info("%s: %d words of dimension %d", output, len(words), dim)
    return len(words)
