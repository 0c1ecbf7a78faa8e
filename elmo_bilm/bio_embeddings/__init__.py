"""SeqVec through `bio_embeddings`' API, without AllenNLP or bio_embeddings.

SeqVec (Heinzinger et al. 2019) is an ELMo biLM over amino acids: each residue is a token. Code
written for `bio_embeddings` switches with one import line::

    from elmo_bilm.bio_embeddings import SeqVecEmbedder  # was: from bio_embeddings.embed ...

    embedder = SeqVecEmbedder(model_directory="uniref50_v2")  # or weights_file + options_file
    embedding = embedder.embed("MKTAYIAKQR")  # numpy (3, 10, 1024): layers x residues x dim
    protein = SeqVecEmbedder.reduce_per_protein(embedding)  # (1024,)

Any biLM source `elmo_bilm.sources.resolver` takes works (bilm-tf files, a folder, an archive,
`hf://ORG/REPO`), so a protein biLM trained or converted here loads the same way; the width is
the biLM's (`embedding_dimension`), 1024 for SeqVec.

As bio_embeddings' does (through AllenNLP 0.9's `ElmoEmbedder`), the embedder is stateful by
default: each batch row starts from the LSTM states the same row ended with in the batch
before, and the constructor first embeds a sample protein `warmup_rounds` times, so the vectors
are bio_embeddings' call after call. `stateful=False` starts every protein from zero states
instead: its vectors do not depend on what was embedded before, nor on the batching.
"""

import logging
import os
from typing import Any, Iterable, Iterator, List, Optional, Tuple, Union

import numpy
import torch

from elmo_bilm.elmo import ElmoEmbedder
from elmo_bilm.utils.files import UsageError

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


def _cuda_device(device: Union[None, str, torch.device]) -> int:
    """`ElmoEmbedder`'s `cuda_device` for bio_embeddings' `device` (None: the first GPU if
    there is one, as `bio_embeddings.utilities.get_device` chooses)."""
    if device is None:
        return 0 if torch.cuda.is_available() else -1
    device = torch.device(device)
    if device.type == "cpu":
        return -1
    if device.type == "cuda":
        return device.index or 0
    raise UsageError(f"device must be the CPU or a CUDA device, got {device}")


def _bilm_files(
    model_directory: Optional[str], weights_file: Optional[str], options_file: Optional[str]
) -> Tuple[str, Optional[str]]:
    """`(options, weights)` for `load_bilm`: bio_embeddings' `model_directory` alone (the
    resolver reads its `options_file` + `weights_file`, or any other folder it reads, such as
    SeqVec's unzipped `options.json` + `weights.hdf5`), or the two files (or a source named by
    `options_file` alone)."""
    if model_directory is not None:
        if weights_file is not None or options_file is not None:
            raise UsageError("give either model_directory or weights_file + options_file")
        return os.fspath(model_directory), None
    if options_file is None:
        raise UsageError(
            "give model_directory, or weights_file and options_file (SeqVec's files: "
            "bio_embeddings downloads them, this package does not)"
        )
    return options_file, weights_file


class SeqVecEmbedder:
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
        bilm-tf files instead (paths or URLs), or any biLM source as `options_file` alone.
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
        if max_amino_acids < 1:
            raise UsageError("max_amino_acids must be at least 1")
        options, weights = _bilm_files(model_directory, weights_file, options_file)
        self._options = dict(kwargs)  # bio_embeddings keeps its other options; none apply here
        self.warmup_rounds = warmup_rounds
        self.max_amino_acids = max_amino_acids
        self._model = ElmoEmbedder(
            options, weights, _cuda_device(device), precision, stateful, max_amino_acids
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
        yield from self._model.embed_batch([list(sequence) for sequence in batch])

    def embed_many(
        self, sequences: Iterable[str], batch_size: Optional[int] = None
    ) -> Iterator[numpy.ndarray]:
        """Lazily, in input order. Stateful (the default), batched as bio_embeddings batches,
        since the vectors depend on it: without `batch_size` one protein a batch; with it,
        consecutive proteins while their residues (without padding) stay below `batch_size`, a
        longer protein alone. (bio_embeddings embeds such a protein before the batch pending and
        yields it out of input order; here the pending batch goes first.) Stateless: batched
        while a batch holds at most `batch_size` padded residues (rows x the longest; default
        `max_amino_acids`), so memory stays bounded whatever the lengths; a protein longer than
        that makes a batch of its own."""
        if self.stateful:
            yield from self._embed_many_stateful(sequences, batch_size)
            return
        budget = self.max_amino_acids if batch_size is None else batch_size
        if budget < 1:
            raise UsageError("batch_size must be at least 1")
        batch: List[str] = []
        longest = 0
        for sequence in sequences:
            if batch and (len(batch) + 1) * max(longest, len(sequence)) > budget:
                yield from self.embed_batch(batch)
                batch, longest = [], 0
            batch.append(sequence)
            longest = max(longest, len(sequence))
        if batch:
            yield from self.embed_batch(batch)

    def _embed_many_stateful(
        self, sequences: Iterable[str], batch_size: Optional[int]
    ) -> Iterator[numpy.ndarray]:
        """`embed_many` batched as bio_embeddings' `EmbedderInterface.embed_many`."""
        if not batch_size:
            for sequence in sequences:
                yield self.embed(sequence)
            return
        batch: List[str] = []
        residues = 0
        for sequence in sequences:
            if len(sequence) > batch_size:
                if batch:
                    yield from self.embed_batch(batch)
                    batch, residues = [], 0
                yield from self.embed_batch([sequence])
                continue
            if batch and residues + len(sequence) >= batch_size:
                yield from self.embed_batch(batch)
                batch, residues = [], 0
            batch.append(sequence)
            residues += len(sequence)
        if batch:
            yield from self.embed_batch(batch)

    @staticmethod
    def reduce_per_protein(embedding: numpy.ndarray) -> numpy.ndarray:
        """SeqVec's per-protein vector: the layers summed, then the mean over residues,
        `(n_layers, n_residues, dim)` -> `(dim,)`."""
        return embedding.sum(0).mean(0)


__all__ = ["DEFAULT_MAX_AMINO_ACIDS", "WARMUP_SEQUENCE", "SeqVecEmbedder"]
