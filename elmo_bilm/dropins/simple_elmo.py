"""NLPL's simple_elmo 0.9 programming interface (`simple_elmo.ElmoModel`), without TensorFlow.

A script written for simple_elmo runs with one import line switched::

    from elmo_bilm.dropins.simple_elmo import ElmoModel  # was: from simple_elmo import ElmoModel

    model = ElmoModel()
    model.load("/path/to/nlpl_model.zip")         # or the unzipped folder
    vectors = model.get_elmo_vectors([["a", "sentence"], ["another", "one"]])

`ElmoModel().load(directory, max_batch_size=32, limit=100, full=False)` takes an NLPL model, a
ZIP archive or its unzipped folder (`options.json`, `model.hdf5` or another `*.hdf5`, and an
optional `vocab.txt`), or any other biLM that `elmo_bilm.sources.resolver.resolve_bilm` names
alone, and returns simple_elmo's message, "The model is now loaded.".
`get_elmo_vectors(texts, warmup=True, layers="average")` returns a float64 array
`(n_texts, longest text, dim)` (`(n_texts, n_layers, longest text, dim)` for `layers="all"`);
`get_elmo_vector_average` one vector per text: the mean of its token vectors, scaled to unit
length. `layers` is "average" (the layers' plain mean: simple_elmo's
fresh scalar mix, equal weights and gamma 1), "top" (the top LSTM layer) or "all".

Stateful, as the original: simple_elmo's bilm-tf graph keeps each batch row's LSTM states in
variables of the TensorFlow session that the next batch's same row starts from; each call without
`session` opens a new session and initialises its variables (zero states); a call with `session`
skips the initialisation and continues from that session's variables. By default `ElmoModel`
does the same: a call without `session` starts from zero states; a call with `session` starts
from the states that the last call with that same session object left (zero for a session not
seen before), and leaves its own states to it; the sessions are held weakly (a session the
caller drops is forgotten; an object that cannot be weakly referenced is remembered only until
another such one is passed). `warmup=True` first runs the call's first batch once to settle the
states (its outputs dropped), then the texts run in batches of `max_batch_size` in input order,
each row starting from the states the same row ended with in the batch before; so calls give the
original's numbers call after call. Padding is the original's too: after a text's tokens, up to
its batch's longest text, `get_elmo_vectors` holds what bilm-tf outputs at a padding position,
in the token layer the character CNN's vector of a token of padding characters (all ids 0; the
LSTM layers are zero there; "average" holds a third of it), and zeros past the batch's longest
text up to the call's; `get_elmo_vector_average` averages over those same positions, so a
shorter text's average leans towards that vector (fixtures/simple_elmo holds simple_elmo 0.9.2's
own outputs, tests/elmo_bilm/dropins/test_simple_elmo_reference.py compares).
`load(..., stateful=False)` (keyword only) starts every text from zero states instead, writes
zeros after each text's tokens and averages over the text's own tokens: a text's vectors then do
not depend on the texts beside it, and `warmup` and `session` change nothing.

Differences, on purpose:

- `session` is any object naming a state (a TensorFlow session works; nothing is run in it), and
  its call honours `layers`: simple_elmo runs, with a session, the op that its last call without
  one built (that call's `layers`, whatever `layers` says), and a session whose variables the
  caller re-initialises starts from zero there, not here;
- `limit` and `vocab.txt` only cached character ids in simple_elmo (the vectors never depended
  on them): accepted, not needed;
- `full=True` (the language model's softmax, for `get_elmo_substitutes`) is refused: only the
  embedding layers are here;
- simple_elmo's other public names (`Batcher`, `BidirectionalLanguageModel`, `weight_layers`,
  its TensorFlow graph's pieces) import, so that a script importing them runs, and raise
  `UnsupportedName` (one line naming what is supported) when built or called;
- a string where a list of tokens belongs is a `TypeError` (simple_elmo embeds its characters as
  tokens); an empty list of texts gives an empty array, and an empty text with nothing to
  average (stateless, or in a batch of empty texts only) a zero average (simple_elmo fails on
  the first and divides zero by zero on the second);
- `get_elmo_vector_average(..., layers="all")` averages each layer over the text's positions and
  scales the `(n_layers, dim)` matrix to unit (Frobenius) length, as simple_elmo scales it;
  simple_elmo 0.9.2 reshapes the batch's `(layers, tokens)` axes without transposing them first,
  so its per-layer averages mix layers and positions.

The underlying `ElmoEmbedder` is built in one method (`ElmoModel._make_embedder`), which passes
the mode through.
"""

import logging
import weakref
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy
import torch

from elmo_bilm.dropins.allennlp import ElmoEmbedder
from elmo_bilm.runtime.engine import embed_each, input_order_batching, same_words
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.utils.checks import whole_number
from elmo_bilm.utils.devices import cuda_device_of
from elmo_bilm.utils.files import UsageError
from elmo_bilm.utils.names import UserPath, required_path

__all__ = [
    "ElmoModel",
    "divide_chunks",
    "Batcher",
    "BidirectionalLanguageModel",
    "weight_layers",
    "UnsupportedName",
]

name = "simple_elmo"  # the package attribute simple_elmo's `__init__` sets

LAYERS = ("average", "top", "all")
LOADED = "The model is now loaded."  # what simple_elmo's `load` returns

T = TypeVar("T")
States = Tuple[Any, ...]  # the biLM's carried `(h, c)`, or `()` for zero states


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
        self.stateful = True
        self.padding_layers: Optional[numpy.ndarray] = None
        self._sessions = _SessionStates()
        self.logger = logging.getLogger(__name__)

    def load(
        self,
        directory: UserPath,
        max_batch_size: int = 32,
        limit: int = 100,
        full: bool = False,
        *,
        cuda_device: Optional[int] = None,
        stateful: bool = True,
    ) -> str:
        """Load the biLM in `directory` (an NLPL ZIP archive or its unzipped folder) and return
        "The model is now loaded.". `max_batch_size`: at most this many texts a batch (batches
        never change the vectors here); `limit`: accepted, not needed (simple_elmo cached the
        first `limit` words' character ids); `full=True` is refused (no language-model softmax
        here). `cuda_device` (keyword only; not in simple_elmo): the GPU, -1 for the CPU; by
        default GPU 0 when torch sees one, as TensorFlow decides. `stateful` (keyword only; not
        in simple_elmo): carry LSTM states between batches as simple_elmo does (the default), or
        start every text from zero states (`False`)."""
        if full:
            raise UsageError(
                "full=True loads simple_elmo's language model for get_elmo_substitutes, which "
                "elmo_bilm does not provide; load with full=False to embed texts"
            )
        max_batch_size = int(whole_number(max_batch_size, "max_batch_size") or 1)
        required_path(directory, "load's directory")
        self.logger.info("Loading model from %s...", directory)
        cuda_device = cuda_device_of(cuda_device)
        self.stateful = stateful
        embedder = self._make_embedder(directory, cuda_device)
        bilm = embedder.elmo_bilm
        self.embedder = embedder
        self.batch_size = max_batch_size
        self.max_chars = int(getattr(bilm, "max_characters_per_token", 50))
        self.vector_size = bilm.get_output_dim()
        self.n_layers = bilm.num_layers
        self.padding_layers = _padding_layers(bilm, self.max_chars)
        return LOADED

    def _make_embedder(self, directory: UserPath, cuda_device: int) -> ElmoEmbedder:
        """The one place the underlying embedder is built, stateful or not (`self.stateful`)."""
        return ElmoEmbedder(directory, None, cuda_device=cuda_device, stateful=self.stateful)

    def get_elmo_vectors(
        self,
        texts: Sequence[Sequence[str]],
        warmup: bool = True,
        layers: str = "average",
        session: Any = None,
    ) -> numpy.ndarray:
        """The token vectors of `texts` (lists of tokens), float64: `(n_texts, longest text,
        dim)` for `layers` "average" or "top", `(n_texts, n_layers, longest text, dim)` for
        "all". Stateful (the default): after each text's tokens, up to its batch's longest text,
        the padding token's layers (as simple_elmo), zero beyond; `warmup` runs the first batch
        once first; a call starts from zero states, or with `session` from the states its last
        call with that session left. Stateless: zero after each text's tokens."""
        texts = _texts(texts)
        per_text = self._embed(texts, warmup, layers, session, padded=True)
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
        """One float64 vector per text: the mean of its token vectors (stateful, as simple_elmo:
        of its batch's longest text's positions, padding vectors included) divided by its length
        (L2 norm), `(n_texts, dim)`; for `layers="all"` each layer's mean, the `(n_layers, dim)`
        matrix divided by its Frobenius norm, `(n_texts, n_layers, dim)`. Nothing to average
        (an empty text, stateless or among empty texts only) gives zeros. `warmup` and `session`
        as in `get_elmo_vectors`."""
        texts = _texts(texts)
        per_text = self._embed(texts, warmup, layers, session, padded=True)
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
        """simple_elmo's warm-up: run the first batch of `texts` (`max_batch_size` texts) once,
        outputs dropped, to settle the LSTM states carried between batches: those of session
        `sess` (as a call with `session=sess` keeps them), or the model's current ones for
        `None`. A stateless model has nothing to settle."""
        embedder = self._loaded()
        texts = _texts(texts)
        if sess is None or not embedder.stateful:
            self._warm(embedder, texts)
            return
        embedder.states = self._sessions.get(sess)
        try:
            self._warm(embedder, texts)
        finally:
            self._sessions.put(sess, embedder.states)

    def _warm(self, embedder: ElmoEmbedder, texts: Sequence[Sequence[str]]) -> None:
        """Run the first batch of `texts` once on the current states (stateful only)."""
        if embedder.stateful and len(texts) > 0:
            first = list(texts[: self._size()])
            self.logger.info("Warming up ELMo on %d sentences...", len(first))
            for _ in self._batches(embedder, first, Layers("top")):
                pass
            self.logger.info("Warming up finished.")

    def _size(self) -> int:
        return int(self.batch_size or 32)

    def _loaded(self) -> ElmoEmbedder:
        if self.embedder is None:
            raise UsageError("no model loaded: call ElmoModel().load(PATH) first")
        return self.embedder

    def _embed(
        self,
        texts: Sequence[Sequence[str]],
        warmup: bool,
        layers: str,
        session: Any = None,
        padded: bool = False,
    ) -> List[numpy.ndarray]:
        """Each text's kept layers: `(n_tokens, dim)` ("average", "top") or `(n_layers,
        n_tokens, dim)` ("all"), float32, in input order; `padded` (stateful only): up to its
        batch's longest text, with the padding token's layers after its own tokens. Stateful,
        the run starts from zero states, or `session`'s, and leaves its states to `session`."""
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
        if not embedder.stateful or session is None:
            embedder.reset_states()  # a fresh TensorFlow session: its state variables are zero
            return self._run(embedder, texts, warmup, layers, padded)
        embedder.states = self._sessions.get(session)  # that session's state variables
        try:
            return self._run(embedder, texts, warmup, layers, padded)
        finally:
            self._sessions.put(session, embedder.states)

    def _run(
        self,
        embedder: ElmoEmbedder,
        texts: Sequence[Sequence[str]],
        warmup: bool,
        layers: str,
        padded: bool,
    ) -> List[numpy.ndarray]:
        """`_embed`'s run from the current states: the warm-up batch, then every batch."""
        if warmup:
            self._warm(embedder, texts)
        kept = Layers.of(layers)
        if not embedder.stateful:
            return list(embedder.embed_sentences(texts, batch_size=self._size(), layers=kept))
        arrays = list(self._batches(embedder, texts, kept, padded))
        if padded and self.padding_layers is not None:
            # bilm-tf's output at a padding position, kept as the text's layers are
            padding = kept.keep(self.padding_layers[:, None, :])
            for text, array in zip(texts, arrays):
                array[..., len(text) :, :] = padding
        return arrays

    def _batches(
        self,
        embedder: ElmoEmbedder,
        texts: Sequence[Sequence[str]],
        layers: Layers,
        padded: bool = False,
    ) -> Iterator[numpy.ndarray]:
        """Each text's kept layers in input order, run as simple_elmo runs them (stateful):
        batches of `max_batch_size` texts in input order (its `divide_chunks`), every one run
        (an empty text as `<S> </S>`), `padded` up to the batch's longest text, through the
        engine (`embed_each`)."""
        return embed_each(
            embedder.elmo_bilm,
            texts,
            same_words,
            input_order_batching(self._size()),
            embedder.device,
            layers,
            embedder.max_tokens,
            padded,
        )


def _texts(texts: Iterable[Sequence[str]]) -> Sequence[Sequence[str]]:
    """`texts` as a sequence: a generator or iterator read into a list (the checks and the
    batches each go over the texts, and the output's shape needs their number); a string is
    left for `_embed` to refuse."""
    if isinstance(texts, (str, Sequence)) or texts is None:
        return texts  # type: ignore[return-value]
    return list(texts)


class UnsupportedName(UsageError, NotImplementedError):
    """One of simple_elmo's TensorFlow-level names that this package does not implement, used."""


SUPPORTED = "ElmoModel (load, get_elmo_vectors, get_elmo_vector_average, warmup) and divide_chunks"


def _unsupported(what: str, role: str) -> UnsupportedName:
    return UnsupportedName(
        f"simple_elmo's {what} ({role}) is not implemented by elmo_bilm, which has no "
        f"TensorFlow graph; supported here: {SUPPORTED}"
    )


class Batcher:
    """simple_elmo's `Batcher` (`simple_elmo.data`: TensorFlow character ids from a vocabulary
    file): importable, so that simple_elmo's module surface imports; building one raises
    `UnsupportedName` (`ElmoModel` makes its ids itself)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("Batcher", "its TensorFlow graph's character ids")


class BidirectionalLanguageModel:
    """simple_elmo's `BidirectionalLanguageModel` (`simple_elmo.model`: bilm-tf's TensorFlow
    graph): importable; building one raises `UnsupportedName` (`ElmoModel` runs the biLM)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("BidirectionalLanguageModel", "bilm-tf's TensorFlow graph")


def weight_layers(*args: Any, **kwargs: Any) -> Any:
    """simple_elmo's `weight_layers` (`simple_elmo.elmo`: the layer mix as TensorFlow ops):
    importable; calling it raises `UnsupportedName` (`get_elmo_vectors(layers=...)` mixes)."""
    raise _unsupported("weight_layers", "the layer mix as TensorFlow ops")


class _SessionStates:
    """The LSTM states each caller's `session` object was left with, as each TensorFlow session
    holds its own state variables: held weakly (a session dropped by the caller is forgotten);
    one object that cannot be weakly referenced or hashed is held until another replaces it."""

    def __init__(self) -> None:
        self._weak: weakref.WeakKeyDictionary[Any, States] = weakref.WeakKeyDictionary()
        self._other: Optional[Tuple[Any, States]] = None

    def get(self, session: Any) -> States:
        """`session`'s states; `()` (zero states) for a session not seen before."""
        try:
            return self._weak.get(session, ())
        except TypeError:
            if self._other is not None and self._other[0] is session:
                return self._other[1]
            return ()

    def put(self, session: Any, states: States) -> None:
        try:
            self._weak[session] = states
        except TypeError:
            self._other = (session, states)


def _padding_layers(bilm: Any, max_chars: int) -> numpy.ndarray:
    """`(n_layers, dim)`: what bilm-tf's biLM outputs at a padding position (character ids all
    0, the padding row of its character embedding): in the token layer the character CNN's
    vector of that token, twice (forward; backward), as at a real token; zero in the LSTM layers
    (TensorFlow's `dynamic_rnn` outputs zero past a sequence's length)."""
    layers = numpy.zeros((bilm.num_layers, bilm.get_output_dim()), dtype=numpy.float32)
    char_cnn = getattr(bilm, "char_cnn", None)
    if char_cnn is None:
        return layers
    device = next(bilm.parameters()).device
    with torch.no_grad():
        ids = torch.zeros((1, max_chars), dtype=torch.long, device=device)
        token = char_cnn.encode_words(ids, trim=False)[0].float().cpu().numpy()
    layers[0] = numpy.concatenate([token, token])
    return layers
