"""AllenNLP's `Elmo`, `batch_to_ids` and AllenNLP 0.9's `ElmoEmbedder`, without AllenNLP.

A PyTorch script switches with one import line::

    from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids  # was: from allennlp.modules.elmo ...

Same constructor arguments, same outputs. One difference, on purpose: the biLM is stateless
(every sentence starts from a zero LSTM state), so a sentence gets the same vectors in any batch;
AllenNLP's carries LSTM states from one batch to the next, so its outputs equal these on its
first call only.
"""

from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from torch import nn

from elmo_bilm.bilm import BiLm, frozen
from elmo_bilm.bulk import embed_file
from elmo_bilm.characters import batch_char_ids, vocabulary_char_ids
from elmo_bilm.loading import load_bilm
from elmo_bilm.scalar_mix import ScalarMix

# AllenNLP 0.9's default for `ElmoEmbedder`'s methods (the `elmo-embed` command's is 128)
EMBEDDER_BATCH_SIZE = 64
batch_to_ids = batch_char_ids  # AllenNLP's name: tokenised sentences -> (batch, T, 50) ids


class Elmo(nn.Module):
    """AllenNLP's `allennlp.modules.elmo.Elmo`: `num_output_representations` Eq. (1) mixes of one
    biLM pass, each with its own `softmax(w)` and `gamma`, and dropout.

    `forward(inputs, word_inputs=None)` returns `{"elmo_representations": [(batch, T, dim)] * n,
    "mask": (batch, T)}` for character ids from `batch_to_ids` (or, with `vocab_to_cache`,
    word ids into that vocabulary).

    # Parameters

    options_file, weight_file : `str`, optional
        bilm-tf files, as paths or http(s) URLs (downloaded once into a cache, as AllenNLP's
        `cached_path` did); a published biLM's name as `options_file` alone (`small`, `medium`,
        `original`, `original_5.5b`); neither: the biLM shipped with this package.
    num_output_representations : `int`, optional (default = `1`)
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM (frozen, in eval mode, by default).
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
    vocab_to_cache : `List[str]`, optional
        Words whose character ids are looked up by index, so that `forward` may take
        `word_inputs` `(batch, T)` (0 = padding) instead of character ids.
    keep_sentence_boundaries : `bool`, optional (default = `False`)
        Keep the `<S>` and `</S>` positions in the outputs and mask.
    scalar_mix_parameters : `List[float]`, optional
        Fixed raw mixing weights (not trained).
    module : `BiLm`, optional
        A biLM already in memory, instead of the files.
    """

    def __init__(
        self,
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        num_output_representations: int = 1,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        vocab_to_cache: Optional[List[str]] = None,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Optional[List[float]] = None,
        module: Optional[BiLm] = None,
    ) -> None:
        super().__init__()
        if module is not None and (options_file is not None or weight_file is not None):
            raise ValueError("give either module or options_file + weight_file")
        self.bilm = module if module is not None else load_bilm(options_file, weight_file)
        self.requires_grad = requires_grad
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(requires_grad)
        self.keep_sentence_boundaries = keep_sentence_boundaries
        self.scalar_mixes = nn.ModuleList(
            ScalarMix(
                self.bilm.num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self.dropout = nn.Dropout(dropout)
        if vocab_to_cache is not None:
            words = vocabulary_char_ids(vocab_to_cache)
            self.register_buffer("word_char_ids", words, persistent=False)
        else:
            self.word_char_ids = None

    @classmethod
    def from_pretrained(
        cls, name: str, num_output_representations: int = 1, **kwargs: Any
    ) -> "Elmo":
        """A published biLM by name (`small`, `medium`, `original`, `original_5.5b`: AllenNLP's
        files, downloaded once into the cache of `elmo_bilm.published`), with `Elmo`'s other
        arguments; the same as `Elmo(name, None, ...)`."""
        return cls(name, None, num_output_representations, **kwargs)

    def get_output_dim(self) -> int:
        return self.bilm.get_output_dim()

    def forward(
        self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
    ) -> Dict[str, Any]:
        if word_inputs is not None:
            if self.word_char_ids is None:
                raise ValueError("word_inputs need vocab_to_cache")
            inputs = self.word_char_ids[word_inputs]
        if self.requires_grad:
            output = self.bilm(inputs, keep_sentence_boundaries=self.keep_sentence_boundaries)
        else:
            with frozen(self.bilm):
                output = self.bilm(inputs, keep_sentence_boundaries=self.keep_sentence_boundaries)
        layers, mask = output["activations"], output["mask"]
        representations = [self.dropout(mix(layers, mask)) for mix in self.scalar_mixes]
        return {"elmo_representations": representations, "mask": mask}


class ElmoEmbedder:
    """AllenNLP 0.9's `allennlp.commands.elmo.ElmoEmbedder`: every biLM layer of tokenised
    sentences as numpy arrays `(3, n_tokens, dim)` (more layers for deeper biLMs).

    # Parameters

    options_file, weight_file : `str`, optional
        bilm-tf files, paths or URLs, or a published name alone (as `Elmo`); neither: the biLM
        shipped with this package.
    cuda_device : `int`, optional (default = `-1`)
        GPU id, -1 for the CPU.
    """

    def __init__(
        self,
        options_file: Optional[str] = None,
        weight_file: Optional[str] = None,
        cuda_device: int = -1,
    ) -> None:
        self.cuda_device = cuda_device
        self.device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
        self.elmo_bilm = load_bilm(options_file, weight_file).to(self.device).eval()

    def batch_to_embeddings(
        self, batch: Sequence[Sequence[str]]
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """`(activations (batch, n_layers, T, dim), mask (batch, T))` on the model's device."""
        with torch.no_grad():
            output = self.elmo_bilm(batch_to_ids(batch).to(self.device))
        return torch.stack(output["activations"], dim=1), output["mask"]

    def embed_sentence(self, sentence: Sequence[str]) -> numpy.ndarray:
        """`(n_layers, n_tokens, dim)` for one tokenised sentence (a list of tokens; a string
        is refused: AllenNLP embedded its characters as tokens)."""
        if isinstance(sentence, str):
            raise TypeError(
                f"embed_sentence takes a list of tokens, got the string {sentence[:40]!r}; "
                f"e.g. embed_sentence({sentence[:20]!r}.split())"
            )
        return self.embed_batch([sentence])[0]

    def embed_batch(self, batch: Sequence[Sequence[str]]) -> List[numpy.ndarray]:
        """One `(n_layers, n_tokens, dim)` array per sentence (an empty sentence: zero tokens)."""
        dim, layers = self.elmo_bilm.get_output_dim(), self.elmo_bilm.num_layers
        if all(len(sentence) == 0 for sentence in batch):
            return [numpy.zeros((layers, 0, dim), dtype=numpy.float32) for _ in batch]
        activations, _ = self.batch_to_embeddings(batch)
        host = activations.cpu().numpy()
        return [host[row, :, : len(sentence)] for row, sentence in enumerate(batch)]

    def embed_sentences(
        self, sentences: Iterable[Sequence[str]], batch_size: int = EMBEDDER_BATCH_SIZE
    ) -> Iterator[numpy.ndarray]:
        """Lazily, in input order: reads `16 * batch_size` sentences at a time, embeds them in
        batches of similar length (the biLM is stateless, so order is free) and yields them."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        chunk: List[Sequence[str]] = []
        for sentence in sentences:
            chunk.append(sentence)
            if len(chunk) == 16 * batch_size:
                yield from self._embed_chunk(chunk, batch_size)
                chunk = []
        yield from self._embed_chunk(chunk, batch_size)

    def _embed_chunk(
        self, chunk: Sequence[Sequence[str]], batch_size: int
    ) -> Iterator[numpy.ndarray]:
        order = sorted(range(len(chunk)), key=lambda i: len(chunk[i]))
        results: List[Optional[numpy.ndarray]] = [None] * len(chunk)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            for row, array in zip(rows, self.embed_batch([chunk[i] for i in rows])):
                results[row] = array
        yield from results  # type: ignore[misc]

    def embed_file(
        self,
        input_file: Union[str, IO[str]],
        output_file_path: str,
        output_format: str = "all",
        batch_size: int = EMBEDDER_BATCH_SIZE,
        forget_sentences: bool = False,
        use_sentence_keys: bool = False,
    ) -> None:
        """The HDF5 file `elmo-embed` writes (one dataset per line; `output_format` "all", "top"
        or "average"); `input_file` is a path or an open text file with a name."""
        path = input_file if isinstance(input_file, str) else input_file.name
        embed_file(
            self.elmo_bilm,
            path,
            output_file_path,
            layers=output_format,
            batch_size=batch_size,
            cuda_device=self.cuda_device,
            sentence_index=not forget_sentences,
            sentence_keys=use_sentence_keys,
        )
