"""Context-free word vectors for the Table 1 baselines: word2vec on the biLM's own corpus.

The paper's baselines start from GloVe (Senna for NER), which cannot be downloaded here. Vectors
trained on the same tokenised Wikipedia the shipped biLM read make the comparison the paper's:
ELMo against context-free vectors of the same text, i.e. what context adds. gensim's word2vec
(skip-gram, negative sampling) streams the corpus from disk on every pass (one plain-text copy of
it, read in C), so memory is bounded by the vocabulary (`max_vocab`), not the corpus; one worker
with a fixed seed and a fixed string hash makes the output reproducible byte for byte.
"""

import gzip
import logging
import os
import zlib
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

from elmo_bilm.utils.files import FormatError, UsageError, atomic_output, numbered_lines
from elmo_bilm.utils.progress import progress_bar

logger = logging.getLogger(__name__)


class VectorSet(NamedTuple):
    """One baseline vector file: its size, its casing and the task configs that read it."""

    dim: int
    lowercase: bool
    variables: Sequence[str]


# The supplement's vectors per task and their stand-ins here, named w2v_<casing>_<dim>d: GloVe 840B
# (cased, 300-d) for SNLI, SQuAD and coreference; GloVe 300-d for SST (whose config lowercases);
# GloVe 6B (lowercased, 100-d) for SRL; Senna (lowercased, 50-d) for NER.
BASELINE_VECTORS: Dict[str, VectorSet] = {
    "w2v_cased_300d": VectorSet(
        300, False, ("SNLI_WORD_VECTORS", "SQUAD_WORD_VECTORS", "COREF_WORD_VECTORS")
    ),
    "w2v_lower_300d": VectorSet(300, True, ("SST_WORD_VECTORS",)),
    "w2v_lower_100d": VectorSet(100, True, ("SRL_WORD_VECTORS",)),
    "w2v_lower_50d": VectorSet(50, True, ("CONLL2003_WORD_VECTORS",)),
}


def vectors_dir() -> Path:
    """Where the baseline vectors live (absolute): `$ELMO_PLUGIN_VECTORS`, else
    `~/.cache/elmo_plugin/vectors`."""
    default = Path.home() / ".cache" / "elmo_plugin" / "vectors"
    return Path(os.path.abspath(os.path.expanduser(os.environ.get("ELMO_PLUGIN_VECTORS", default))))


def vector_defaults() -> Dict[str, str]:
    """Each task's word-vector variable -> its baseline file under `vectors_dir()`."""
    return {
        variable: str(vectors_dir() / f"{name}.txt.gz")
        for name, spec in BASELINE_VECTORS.items()
        for variable in spec.variables
    }


def write_line_corpus(paths: Sequence[str], output: str, lowercase: bool = False) -> int:
    """Concatenate one-sentence-per-line files (plain or gzip) into the plain text file `output`
    (optionally lowercased), streaming: gensim's `corpus_file` mode reads such a file in C, about
    4x faster than a Python iterable of sentences. Returns the number of sentences."""
    count = 0
    with open(output, "w", encoding="utf-8") as out:
        for path in paths:
            for _, line in numbered_lines(path):
                tokens = (line.lower() if lowercase else line).split()
                if tokens:
                    out.write(" ".join(tokens) + "\n")
                    count += 1
    return count


def _crc32_hash(text: str) -> int:
    """A string hash that is the same in every process (Python's `hash` is salted per process)."""
    return zlib.crc32(text.encode("utf-8"))


class _EpochProgress:
    """A progress bar over word2vec's epochs (its ETA: the epochs so far), as a gensim callback."""

    def __init__(self, epochs: int, name: str) -> None:
        self.bar = progress_bar(total=epochs, desc=f"word2vec {name}", unit="epoch")

    def __enter__(self) -> "_EpochProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()

    def on_epoch_begin(self, model: object) -> None:
        """gensim's hook; nothing to do."""

    def on_epoch_end(self, model: object) -> None:
        """One epoch more on the bar."""
        self.bar.update(1)

    def on_train_begin(self, model: object) -> None:
        """gensim's hook; nothing to do."""

    def on_train_end(self, model: object) -> None:
        """gensim's hook; nothing to do."""


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
        raise UsageError("dim, epochs, min_count and max_vocab must be positive")
    with atomic_output(output, overwrite) as partial:  # fail on an existing output before training
        text = f"{partial}.corpus"
        try:
            if write_line_corpus(corpus, text, lowercase) == 0:
                raise FormatError(f"{', '.join(corpus)}: no sentences")
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
            model.build_vocab(corpus_file=text, progress_per=1_000_000)
            words = model.wv.index_to_key
            if not words:
                raise FormatError(
                    f"{', '.join(corpus)}: no word occurs {min_count} times; nothing to train"
                )
            with _EpochProgress(epochs, os.path.basename(output)) as progress:
                model.train(
                    corpus_file=text,
                    total_examples=model.corpus_count,
                    total_words=model.corpus_total_words,
                    epochs=epochs,
                    report_delay=30.0,
                    callbacks=[progress],
                )
        finally:
            if os.path.exists(text):
                os.remove(text)
        opener = gzip.open if output.endswith(".gz") else open
        with opener(partial, "wt", encoding="utf-8") as handle:
            for word in words:
                vector = " ".join(f"{value:.5f}" for value in model.wv[word])
                handle.write(f"{word} {vector}\n")
    logger.info("%s: %d words of dimension %d", output, len(words), dim)
    return len(words)


def missing_baseline_vectors(variables: Sequence[str]) -> Dict[str, VectorSet]:
    """The baseline vector files that `variables` name by default and that do not exist yet (a
    variable the user set to another file, or to empty, is the user's business)."""
    missing = {}
    for name, spec in BASELINE_VECTORS.items():
        path = str(vectors_dir() / f"{name}.txt.gz")
        wanted = [v for v in variables if v in spec.variables]
        if wanted and all(v not in os.environ for v in wanted):
            if not os.path.isfile(path):
                missing[path] = spec
    return missing


def build_baseline_vectors(variables: Sequence[str], wikipedia: str) -> List[str]:
    """Build the missing baseline vector files `variables` need from the WikiExtractor files under
    `wikipedia` (tokenised once into `vectors_dir()/corpus`, resumably), skipping the shards the
    biLM held out (`AB_wiki_98`, `AB_wiki_99`). Returns the files built."""
    from elmo_bilm.utils.files import expand_paths
    from elmo_plugin.data.wikipedia import prepare_corpus

    missing = missing_baseline_vectors(variables)
    if not missing:
        return []
    corpus_dir = vectors_dir() / "corpus"
    held_out = ("AB_wiki_98", "AB_wiki_99")
    sources = [p for p in expand_paths(wikipedia) if not os.path.basename(p).startswith(held_out)]
    corpus = prepare_corpus(sources, str(corpus_dir))
    for path, spec in missing.items():
        logger.info(
            "building %s (%d-d, %s)", path, spec.dim, "lowercased" if spec.lowercase else "cased"
        )
        train_word_vectors(corpus, path, dim=spec.dim, lowercase=spec.lowercase)
    return list(missing)
