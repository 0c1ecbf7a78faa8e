"""SeqVec through `bio_embeddings`' API, without AllenNLP or bio_embeddings.

SeqVec (Heinzinger et al. 2019) is an ELMo biLM over amino acids: each residue is a token. Code
written for `bio_embeddings` switches with one import line::

    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder  # was: from bio_embeddings.embed ...

    embedder = SeqVecEmbedder(model_directory="uniref50_v2")  # or weights_file + options_file
    embedding = embedder.embed("MKTAYIAKQR")  # numpy (3, 10, 1024): layers x residues x dim
    protein = SeqVecEmbedder.reduce_per_protein(embedding)  # (1024,)

Any biLM source `elmo_bilm.sources.resolver` takes works (bilm-tf files, a folder, an archive,
`hf://ORG/REPO`), so a protein biLM trained or converted here loads the same way; the width is
the biLM's (`embedding_dimension`), 1024 for SeqVec. `SeqVecEmbedder()` with no files finds
SeqVec as bio_embeddings does: its two files in bio_embeddings' own cache
(`~/.cache/bio_embeddings/seqvec/`, or under `$XDG_CACHE_HOME`) if a bio_embeddings install left
them there, else downloaded once from bio_embeddings' URLs (`SEQVEC_OPTIONS_URL`,
`SEQVEC_WEIGHTS_URL`) into the cache of `elmo_bilm.sources.published`; offline, one line names
the file to place and where.

The module's surface is bio_embeddings.embed's: every public name it exports imports from here
(`EmbedderInterface`, `name_to_embedder`, `ProtTransBertBFDEmbedder`, `ESM1bEmbedder`, ...), so a
script importing several of them beside `SeqVecEmbedder` runs; the embedders other than SeqVec
are not implemented (this package is ELMo), and one raises a one-line `UnsupportedEmbedder`
naming what is supported when it is used (built, or its `reduce_per_protein` called).

As bio_embeddings' does (through AllenNLP 0.9's `ElmoEmbedder`), the embedder is stateful by
default: each batch row starts from the LSTM states the same row ended with in the batch
before, and the constructor first embeds a sample protein `warmup_rounds` times, so the vectors
are bio_embeddings' call after call. `stateful=False` starts every protein from zero states
instead: its vectors do not depend on what was embedded before, nor on the batching.
"""

import abc
import glob
import logging
import numbers
from typing import Any, ClassVar, Dict, Iterable, Iterator, List, Optional, Tuple, Type, Union

import numpy
import torch

from elmo_bilm.dropins.allennlp import ElmoEmbedder
from elmo_bilm.runtime.engine import (
    BULK_BATCH_SIZE,
    embed_each,
    input_order_batches,
    input_order_batching,
    same_words,
)
from elmo_bilm.sources.published import (  # SeqVec's entry in the catalogue, importable here
    SEQVEC_OPTIONS_URL,
    SEQVEC_WEIGHTS_URL,
    bio_embeddings_cache,
    is_url,
    seqvec_files,
    seqvec_options_file,
)
from elmo_bilm.sources.resolver import names_whole_bilm
from elmo_bilm.utils.checks import whole_number
from elmo_bilm.utils.devices import cuda_device_of
from elmo_bilm.utils.files import UsageError
from elmo_bilm.utils.names import required_path

logger = logging.getLogger(__name__)

# bio_embeddings' default for SeqVec's `max_amino_acids` (residues per `embed_many` batch)
DEFAULT_MAX_AMINO_ACIDS = 15_000
# the sample protein bio_embeddings' SeqVecEmbedder embeds `warmup_rounds` times after loading
# (the CASP target T0922, as its source notes), data for the same starting states
WARMUP_SEQUENCE = (
    "MGSSHHHHHHSSGLVPRGSHMASVQKFPGDANCDGIVDISDAVLIMQTMANPSKYQMTDKGRINADVTGNSDGVTVLDAQFIQSYCL"
    "GLVELPPVE"
)
DEFAULT_WARMUP_ROUNDS = 4


def _bilm_files(
    model_directory: Optional[str], weights_file: Optional[str], options_file: Optional[str]
) -> Tuple[str, Optional[str]]:
    """`(options, weights)` for `load_bilm`: bio_embeddings' `model_directory` alone (the
    resolver reads its `options_file` + `weights_file`, or any other folder it reads, such as
    SeqVec's unzipped `options.json` + `weights.hdf5`), or the two files (or a source named by
    `options_file` alone); `weights_file` alone: with SeqVec's published options
    (`seqvec_options_file`), warned as bio_embeddings warns; none: SeqVec's published files
    (`seqvec_files`)."""
    if model_directory is not None:
        if weights_file is not None or options_file is not None:
            raise UsageError("give either model_directory or weights_file + options_file")
        folder = required_path(model_directory, "SeqVecEmbedder's model_directory")
        if not (names_whole_bilm(folder) or is_url(folder) or glob.glob(glob.escape(folder) + "*")):
            # bio_embeddings' docs name SeqVec's unzipped folder, `uniref50_v2`, as the example
            raise UsageError(
                f"model_directory={folder!r}: no such folder; give the folder SeqVec's archive "
                "unpacks to (options.json and weights.hdf5, or bio_embeddings' options_file and "
                "weights_file), or leave model_directory out for SeqVec from bio_embeddings' "
                "cache or downloaded once"
            )
        return folder, None
    if options_file is None and weights_file is None:
        return seqvec_files()
    if options_file is None:  # bio_embeddings fetches the missing file, and warns
        logger.warning(
            "weights_file %s without options_file: using SeqVec's published options (pass "
            "both files, or neither for bio_embeddings' SeqVec)",
            weights_file,
        )
        return seqvec_options_file(), weights_file
    return options_file, weights_file


def _batch_size(batch_size: Any) -> Optional[int]:
    """`embed_many`'s `batch_size` as bio_embeddings reads it (`if batch_size`): None or 0, no
    batch size; else a whole number of residues, or a one-line `UsageError` naming it."""
    if batch_size is None or (
        isinstance(batch_size, numbers.Real)
        and not isinstance(batch_size, (bool, numpy.bool_))
        and batch_size == 0
    ):
        return None
    return whole_number(batch_size, "batch_size")


def _proteins(sequences: Any, method: str) -> Any:
    """`sequences` unless it is one protein's string, which would be embedded residue by residue
    as proteins of one residue each: a `TypeError` naming the fix."""
    if isinstance(sequences, str):
        raise TypeError(
            f"{method} takes a list of proteins, got the string {sequences[:40]!r}; one protein: "
            f"embed(sequence), or {method}([sequence])"
        )
    return sequences


class EmbedderInterface(abc.ABC):
    """bio_embeddings' `EmbedderInterface`: what every embedder of `bio_embeddings.embed` offers
    (`embed`, `embed_batch`, `embed_many`, `reduce_per_protein`, and the class attributes `name`,
    `embedding_dimension`, `number_of_layers`), for code that subclasses it or checks
    `isinstance`. `embed_many` batches as bio_embeddings does: without `batch_size` one
    sequence a call of `embed`; with it, consecutive sequences while their residues stay below
    `batch_size`, a longer one alone (here after the batch pending, which bio_embeddings yields
    after it, out of input order)."""

    name: str
    embedding_dimension: int
    number_of_layers: int

    @abc.abstractmethod
    def embed(self, sequence: str) -> numpy.ndarray:
        """The embedding of one amino-acid sequence."""

    def embed_batch(self, batch: List[str]) -> Iterator[numpy.ndarray]:
        """The embeddings of `batch`, in order (one `embed` each, unless an embedder batches)."""
        for sequence in batch:
            yield self.embed(sequence)

    def embed_many(
        self, sequences: Iterable[str], batch_size: Optional[int] = None
    ) -> Iterator[numpy.ndarray]:
        """Lazily, in input order, batched as bio_embeddings batches (see the class)."""
        budget = _batch_size(batch_size)
        batches = input_order_batches(
            _proteins(sequences, "embed_many"), same_words, 1 if budget is None else None, budget
        )
        for batch in batches:
            yield from self.embed_batch(batch)

    @staticmethod
    @abc.abstractmethod
    def reduce_per_protein(embedding: numpy.ndarray) -> numpy.ndarray:
        """One fixed-size vector for a protein's (variable-size) embedding."""


class SeqVecEmbedder(EmbedderInterface):
    """`bio_embeddings.embed.SeqVecEmbedder`: per-residue ELMo embeddings of protein sequences
    (strings of one-letter amino-acid codes), every biLM layer.

    # Parameters

    warmup_rounds : `int`, optional (default = `4`)
        How often the constructor embeds bio_embeddings' sample protein (`WARMUP_SEQUENCE`)
        to warm the LSTM states, as bio_embeddings does; stateless, there is nothing to warm.
    model_directory : `str`, optional
        A folder holding `options_file` and `weights_file` (bio_embeddings' layout) or any
        folder the resolver reads (SeqVec's unzipped `options.json` + `weights.hdf5`).
    weights_file, options_file : `str`, optional
        bilm-tf files instead (paths or URLs), or any biLM source as `options_file` alone;
        `weights_file` alone takes SeqVec's published options (fetched once, with a warning,
        as bio_embeddings does).
        None of the three: SeqVec's published files, as bio_embeddings finds them
        (`seqvec_files`: its cache, else downloaded once).
    max_amino_acids : `int`, optional (default = `15000`)
        Stateless, `embed_many`'s default batch: at most this many padded residues (rows x the
        longest), the bound that memory follows. Stateful or not, a protein longer than this
        (with its two boundaries) embedded alone runs in exact pieces of this many residues
        (`elmo_bilm.model.chunked`): the same vectors, memory set by this bound, not by the
        protein.
    device : `str` or `torch.device`, optional
        `"cpu"`, `"cuda"`, `"cuda:N"`; None: a GPU if there is one.
    precision : `str`, optional (default = `"float32"`)
        `"bfloat16"` or `"int8"` products (`elmo_bilm.runtime.precision`).
    stateful : `bool`, optional (default = `True`)
        Carry LSTM states from batch to batch as bio_embeddings' AllenNLP 0.9 `ElmoEmbedder`
        does (its vectors depend on what was embedded before, and on the batching); False:
        every protein starts from zero states, the same vectors in any batch and order.

    Not carried over: bio_embeddings' fallback from the GPU to the CPU after a GPU error.
    """

    name = "seqvec"
    embedding_dimension = 1024  # SeqVec's; an instance has its biLM's
    number_of_layers = 3

    def __init__(
        self,
        warmup_rounds: int = DEFAULT_WARMUP_ROUNDS,
        *,
        model_directory: Optional[str] = None,
        weights_file: Optional[str] = None,
        options_file: Optional[str] = None,
        max_amino_acids: int = DEFAULT_MAX_AMINO_ACIDS,
        device: Union[None, str, torch.device] = None,
        precision: str = "float32",
        stateful: bool = True,
        **kwargs: Any,
    ) -> None:
        whole_number(max_amino_acids, "max_amino_acids")
        whole_number(warmup_rounds, "warmup_rounds", minimum=0)
        max_amino_acids, warmup_rounds = int(max_amino_acids), int(warmup_rounds)
        options, weights = _bilm_files(model_directory, weights_file, options_file)
        self._options = dict(kwargs)  # bio_embeddings keeps its other options; none apply here
        self.warmup_rounds = warmup_rounds
        self.max_amino_acids = max_amino_acids
        self._model = ElmoEmbedder(
            options, weights, cuda_device_of(device), precision, stateful, max_amino_acids
        )
        self._device = self._model.device
        self.embedding_dimension = self._model.elmo_bilm.get_output_dim()
        self.number_of_layers = self._model.elmo_bilm.num_layers
        if stateful:
            for _ in range(warmup_rounds):  # bio_embeddings' warm-up: one protein a batch
                self.embed(WARMUP_SEQUENCE)

    @property
    def stateful(self) -> bool:
        """Whether LSTM states carry from one batch to the next (the default)."""
        return self._model.stateful

    def embed(self, sequence: str) -> numpy.ndarray:
        """`(n_layers, n_residues, dim)` for one protein, residue by residue."""
        return self._model.embed_sentence(list(sequence))

    def embed_batch(self, batch: List[str]) -> Iterator[numpy.ndarray]:
        """The proteins of `batch` as one biLM batch, in order."""
        batch = _proteins(batch, "embed_batch")
        yield from self._model.embed_batch([list(sequence) for sequence in batch])

    def embed_many(
        self, sequences: Iterable[str], batch_size: Optional[int] = None
    ) -> Iterator[numpy.ndarray]:
        """Lazily, in input order. Stateful (the default), batched as bio_embeddings batches,
        since the vectors depend on it: without `batch_size` (None or 0, as bio_embeddings'
        `if batch_size` reads it) one protein a batch; with it,
        consecutive proteins while their residues (without padding) stay below `batch_size`, a
        longer protein alone. (bio_embeddings embeds such a protein before the batch pending and
        yields it out of input order; here the pending batch goes first.) Stateless: batched
        while a batch holds at most `batch_size` padded residues (rows x (the longest + its two
        boundaries); default
        `max_amino_acids`), so memory stays bounded whatever the lengths; a protein longer than
        that makes a batch of its own."""
        budget = _batch_size(batch_size)
        proteins = (list(sequence) for sequence in _proteins(sequences, "embed_many"))
        if self.stateful:
            batching = input_order_batching(1 if budget is None else None, budget)
            model = self._model
            yield from embed_each(
                model.elmo_bilm,
                proteins,
                same_words,
                batching,
                model.device,
                max_tokens=self.max_amino_acids,
                skip_lone_empty=True,  # AllenNLP 0.9's embedder, which bio_embeddings runs
            )
            return
        budget = self.max_amino_acids if budget is None else budget
        yield from self._model.embed_sentences(proteins, BULK_BATCH_SIZE, budget)

    @staticmethod
    def reduce_per_protein(embedding: numpy.ndarray) -> numpy.ndarray:
        """SeqVec's per-protein vector: the layers summed, then the mean over residues,
        `(n_layers, n_residues, dim)` -> `(dim,)`. An empty protein (no residues) has no mean:
        a `UsageError` (bio_embeddings returns NaNs, with numpy's warning)."""
        if embedding.ndim != 3 or embedding.shape[1] == 0:
            raise UsageError(
                f"reduce_per_protein takes SeqVec's (layers, residues, dim) embedding of a "
                f"protein with residues, got shape {tuple(embedding.shape)}"
            )
        return embedding.sum(0).mean(0)


class UnsupportedEmbedder(UsageError, NotImplementedError):
    """One of bio_embeddings' embedders that this package does not implement, used."""


SUPPORTED = "SeqVecEmbedder (SeqVec, bio_embeddings' ELMo)"


class _Unsupported(EmbedderInterface):
    """An embedder of bio_embeddings.embed that is not ELMo: importable (bio_embeddings'
    surface), refused with one line when built or its `reduce_per_protein` called."""

    family: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise self._error()

    @classmethod
    def _error(cls) -> UnsupportedEmbedder:
        return UnsupportedEmbedder(
            f"{cls.__name__} ({cls.family}) is one of bio_embeddings' embedders that elmo_bilm "
            f"does not implement; supported here: {SUPPORTED}; use bio_embeddings itself for "
            f"{cls.name!r}"
        )

    def embed(self, sequence: str) -> numpy.ndarray:
        raise self._error()

    @classmethod
    def reduce_per_protein(cls, embedding: numpy.ndarray) -> numpy.ndarray:  # type: ignore[override]
        raise cls._error()


def _unsupported(class_name: str, name: str, family: str) -> Type[EmbedderInterface]:
    """A class of bio_embeddings.embed's name that refuses to be used (`_Unsupported`)."""
    doc = f"bio_embeddings' `{class_name}` ({family}): not implemented here; using it raises."
    attributes = {"name": name, "family": family, "__doc__": doc, "__module__": __name__}
    return type(class_name, (_Unsupported,), attributes)


OneHotEncodingEmbedder = _unsupported("OneHotEncodingEmbedder", "one_hot_encoding", "one-hot")
FastTextEmbedder = _unsupported("FastTextEmbedder", "fasttext", "fastText")
GloveEmbedder = _unsupported("GloveEmbedder", "glove", "GloVe")
Word2VecEmbedder = _unsupported("Word2VecEmbedder", "word2vec", "word2vec")
ProtTransAlbertBFDEmbedder = _unsupported(
    "ProtTransAlbertBFDEmbedder", "prottrans_albert_bfd", "ProtTrans ALBERT"
)
ProtTransBertBFDEmbedder = _unsupported(
    "ProtTransBertBFDEmbedder", "prottrans_bert_bfd", "ProtTrans BERT"
)
ProtTransXLNetUniRef100Embedder = _unsupported(
    "ProtTransXLNetUniRef100Embedder", "prottrans_xlnet_uniref100", "ProtTrans XLNet"
)
ProtTransT5BFDEmbedder = _unsupported("ProtTransT5BFDEmbedder", "prottrans_t5_bfd", "ProtTrans T5")
ProtTransT5UniRef50Embedder = _unsupported(
    "ProtTransT5UniRef50Embedder", "prottrans_t5_uniref50", "ProtTrans T5"
)
ProtTransT5XLU50Embedder = _unsupported(
    "ProtTransT5XLU50Embedder", "prottrans_t5_xl_u50", "ProtTrans T5"
)
ESMEmbedder = _unsupported("ESMEmbedder", "esm", "ESM")
ESM1bEmbedder = _unsupported("ESM1bEmbedder", "esm1b", "ESM-1b")
ESM1vEmbedder = _unsupported("ESM1vEmbedder", "esm1v", "ESM-1v")
UniRepEmbedder = _unsupported("UniRepEmbedder", "unirep", "UniRep")
CPCProtEmbedder = _unsupported("CPCProtEmbedder", "cpcprot", "CPCProt")
PLUSRNNEmbedder = _unsupported("PLUSRNNEmbedder", "plus_rnn", "PLUS-RNN")
BeplerEmbedder = _unsupported("BeplerEmbedder", "bepler", "Bepler")

# bio_embeddings.embed's public names (its `__all__` with every extra installed), in its order
BIO_EMBEDDINGS_NAMES = (
    "EmbedderInterface",
    "OneHotEncodingEmbedder",
    "FastTextEmbedder",
    "GloveEmbedder",
    "Word2VecEmbedder",
    "ProtTransAlbertBFDEmbedder",
    "ProtTransBertBFDEmbedder",
    "ProtTransXLNetUniRef100Embedder",
    "ProtTransT5BFDEmbedder",
    "ProtTransT5UniRef50Embedder",
    "ProtTransT5XLU50Embedder",
    "SeqVecEmbedder",
    "ESMEmbedder",
    "ESM1bEmbedder",
    "ESM1vEmbedder",
    "UniRepEmbedder",
    "CPCProtEmbedder",
    "PLUSRNNEmbedder",
    "BeplerEmbedder",
)
# bio_embeddings' registry, `name` -> class, with the same keys (the unsupported ones refuse use)
name_to_embedder: Dict[str, Type[EmbedderInterface]] = {
    globals()[class_name].name: globals()[class_name] for class_name in BIO_EMBEDDINGS_NAMES[1:]
}


__all__ = [
    *BIO_EMBEDDINGS_NAMES,
    "DEFAULT_MAX_AMINO_ACIDS",
    "SEQVEC_OPTIONS_URL",
    "SEQVEC_WEIGHTS_URL",
    "WARMUP_SEQUENCE",
    "UnsupportedEmbedder",
    "bio_embeddings_cache",
    "name_to_embedder",
    "seqvec_files",
]
