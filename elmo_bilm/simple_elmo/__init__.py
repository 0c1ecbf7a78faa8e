"""NLPL's simple_elmo 0.9 programming interface (`simple_elmo.ElmoModel`), without TensorFlow.

A script written for simple_elmo runs with one import line switched::

    from elmo_bilm.simple_elmo import ElmoModel  # was: from simple_elmo import ElmoModel

    model = ElmoModel()
    model.load("/path/to/nlpl_model.zip")         # or the unzipped folder
    vectors = model.get_elmo_vectors([["a", "sentence"], ["another", "one"]])

`ElmoModel().load(directory, max_batch_size=32, limit=100, full=False)` takes an NLPL model, a
ZIP archive or its unzipped folder (`options.json`, `model.hdf5` or another `*.hdf5`, and an
optional `vocab.txt`), or any other biLM that `elmo_bilm.sources.resolver.resolve_bilm` names
alone, and returns simple_elmo's message, "The model is now loaded.".
`get_elmo_vectors(texts, warmup=True, layers="average")` returns a float64 array
`(n_texts, longest text, dim)` (`(n_texts, n_layers, longest text, dim)` for `layers="all"`),
zero after each text's tokens; `get_elmo_vector_average` one vector per text: the mean of its
token vectors, scaled to unit length. `layers` is "average" (the layers' plain mean: simple_elmo's
fresh scalar mix, equal weights and gamma 1), "top" (the top LSTM layer) or "all".

Differences, on purpose:

- stateless: every sentence starts from zero LSTM states (simple_elmo's bilm-tf graph carries
  them from one batch to the next), so `warmup`, which ran the first batch once to settle those
  states, is accepted and changes nothing until the stateful mode exists; a text's vectors do not
  depend on the texts beside it;
- `limit` and `vocab.txt` only cached character ids in simple_elmo (the vectors never depended
  on them): accepted, not needed; `session` (a TensorFlow session) is accepted and ignored;
- `full=True` (the language model's softmax, for `get_elmo_substitutes`) is refused: only the
  embedding layers are here;
- a string where a list of tokens belongs is a `TypeError` (simple_elmo embeds its characters as
  tokens); an empty list of texts gives an empty array, and an empty text a zero average (simple_elmo
  fails on the first and divides zero by zero on the second);
- `get_elmo_vector_average(..., layers="all")` averages each layer over the text's tokens and
  scales the `(n_layers, dim)` matrix to unit (Frobenius) length, as simple_elmo scales it;
  simple_elmo 0.9.2 reshapes the batch's `(layers, tokens)` axes without transposing them first,
  so its per-layer averages mix layers and positions.

The underlying `ElmoEmbedder` is built in one method (`ElmoModel._make_embedder`), where a
stateful mode will be passed through.
"""

import logging
from typing import Any, Iterator, List, Optional, Sequence, TypeVar

import numpy
import torch

from elmo_bilm.elmo import ElmoEmbedder
from elmo_bilm.utils.files import UsageError

__all__ = ["ElmoModel", "divide_chunks"]

LAYERS = ("average", "top", "all")
LOADED = "The model is now loaded."  # what simple_elmo's `load` returns

T = TypeVar("T")


def divide_chunks(data: Sequence[T], n: int) -> Iterator[Sequence[T]]:
    """`data` in consecutive slices of at most `n` items (simple_elmo's helper of that name)."""
    for start in range(0, len(data), n):
        yield data[start : start + n]


class ElmoModel:
    """simple_elmo's `ElmoModel`: load an NLPL model, then embed tokenised texts.

    After `load`, as in simple_elmo: `batch_size` (the `max_batch_size` given), `max_chars`
    (characters a token), `vector_size` (the biLM's output dimension) and `n_layers` (the LSTM
    layers plus the token layer)."""

    def __init__(self) -> None:
        self.batch_size: Optional[int] = None
        self.max_chars: Optional[int] = None
        self.vector_size: Optional[int] = None
        self.n_layers: Optional[int] = None
        self.embedder: Optional[ElmoEmbedder] = None
        self.logger = logging.getLogger(__name__)

    def load(
        self,
        directory: str,
        max_batch_size: int = 32,
        limit: int = 100,
        full: bool = False,
        *,
        cuda_device: Optional[int] = None,
    ) -> str:
        """Load the biLM in `directory` (an NLPL ZIP archive or its unzipped folder) and return
        "The model is now loaded.". `max_batch_size`: at most this many texts a batch (batches
        never change the vectors here); `limit`: accepted, not needed (simple_elmo cached the
        first `limit` words' character ids); `full=True` is refused (no language-model softmax
        here). `cuda_device` (keyword only; not in simple_elmo): the GPU, -1 for the CPU; by
        default GPU 0 when torch sees one, as TensorFlow decides."""
        if full:
            raise UsageError(
                "full=True loads simple_elmo's language model for get_elmo_substitutes, which "
                "elmo_bilm does not provide; load with full=False to embed texts"
            )
        if (
            isinstance(max_batch_size, bool)
            or not isinstance(max_batch_size, int)
            or max_batch_size < 1
        ):
            raise UsageError(
                f"max_batch_size must be a whole number of at least 1, got {max_batch_size!r}"
            )
        self.logger.info("Loading model from %s...", directory)
        if cuda_device is None:
            cuda_device = 0 if torch.cuda.is_available() else -1
        embedder = self._make_embedder(directory, cuda_device)
        bilm = embedder.elmo_bilm
        self.embedder = embedder
        self.batch_size = max_batch_size
        self.max_chars = int(getattr(bilm, "max_characters_per_token", 50))
        self.vector_size = bilm.get_output_dim()
        self.n_layers = bilm.num_layers
        return LOADED

    def _make_embedder(self, directory: str, cuda_device: int) -> ElmoEmbedder:
        """The one place the underlying embedder is built: a stateful mode, once it exists, is
        passed through here."""
        return ElmoEmbedder(directory, None, cuda_device=cuda_device)

    def get_elmo_vectors(
        self,
        texts: Sequence[Sequence[str]],
        warmup: bool = True,
        layers: str = "average",
        session: Any = None,
    ) -> numpy.ndarray:
        """The token vectors of `texts` (lists of tokens), float64: `(n_texts, longest text,
        dim)` for `layers` "average" or "top", `(n_texts, n_layers, longest text, dim)` for
        "all"; zero after each text's last token. `warmup` changes nothing (stateless) and
        `session` is ignored."""
        per_text = self._embed(texts, warmup, layers)
        longest = max((len(text) for text in texts), default=0)
        bilm = self._loaded().elmo_bilm
        dim, count = bilm.get_output_dim(), bilm.num_layers
        shape = (len(texts), count, longest, dim) if layers == "all" else (len(texts), longest, dim)
        vectors = numpy.zeros(shape)
        for row, array in enumerate(per_text):
            vectors[row, ..., : array.shape[-2], :] = array
        return vectors

    def get_elmo_vector_average(
        self,
        texts: Sequence[Sequence[str]],
        warmup: bool = True,
        layers: str = "average",
        session: Any = None,
    ) -> numpy.ndarray:
        """One float64 vector per text: the mean of its token vectors divided by its length
        (L2 norm), `(n_texts, dim)`; for `layers="all"` each layer's mean, the `(n_layers, dim)`
        matrix divided by its Frobenius norm, `(n_texts, n_layers, dim)`. An empty text gives
        zeros. `warmup` changes nothing (stateless) and `session` is ignored."""
        per_text = self._embed(texts, warmup, layers)
        bilm = self._loaded().elmo_bilm
        dim, count = bilm.get_output_dim(), bilm.num_layers
        shape = (len(texts), count, dim) if layers == "all" else (len(texts), dim)
        averages = numpy.zeros(shape)
        for row, array in enumerate(per_text):
            if array.shape[-2] == 0:
                continue
            mean = array.astype(numpy.float64).mean(axis=-2)
            norm = numpy.linalg.norm(mean)
            if norm > 0:
                averages[row] = mean / norm
        return averages

    def warmup(self, sess: Any = None, texts: Sequence[Sequence[str]] = ()) -> None:
        """simple_elmo ran the first batch once to settle the LSTM states it carries between
        batches; the biLM here is stateless, so there is nothing to settle (the stateful mode
        will do its warm-up here)."""

    def _loaded(self) -> ElmoEmbedder:
        if self.embedder is None:
            raise UsageError("no model loaded: call ElmoModel().load(PATH) first")
        return self.embedder

    def _embed(
        self, texts: Sequence[Sequence[str]], warmup: bool, layers: str
    ) -> List[numpy.ndarray]:
        """Each text's kept layers: `(n_tokens, dim)` ("average", "top") or `(n_layers,
        n_tokens, dim)` ("all"), float32, in input order."""
        embedder = self._loaded()
        if layers not in LAYERS:
            raise UsageError(f"layers must be one of {', '.join(LAYERS)}, got {layers!r}")
        if isinstance(texts, str):
            raise TypeError("texts must be a list of texts, each a list of tokens, not a string")
        for index, text in enumerate(texts):
            if isinstance(text, str):
                raise TypeError(
                    f"each text must be a list of tokens; text {index} is the string "
                    f"{text[:40]!r} (e.g. {text[:20]!r}.split())"
                )
        if warmup:
            self.warmup(None, texts)
        kept = []
        for array in embedder.embed_sentences(texts, batch_size=int(self.batch_size or 32)):
            if layers == "average":
                kept.append(array.mean(axis=0))
            elif layers == "top":
                kept.append(array[-1])
            else:
                kept.append(array)
        return kept
