"""AllenNLP's `Elmo`, `batch_to_ids` and AllenNLP 0.9's `ElmoEmbedder`, without AllenNLP.

A PyTorch script switches with one import line::

    from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids  # was: from allennlp.modules.elmo ...

Same constructor arguments, same defaults, same outputs, call after call: as AllenNLP's, the
biLM is stateful by default (each batch row starts from the LSTM states the same row ended with
in the batch before), and `ElmoEmbedder()` without files loads AllenNLP's `original` biLM, as
0.9's did (downloaded once into the cache of `elmo_bilm.sources.published`). `stateful=False`
starts every sentence from zero states instead: a sentence then gets the same vectors in any
batch, order or call (AllenNLP's first-call vectors). The project's own tools (`elmo-embed`,
the corpus and FASTA runs, the spaCy component, the plugin's token embedder) are stateless.
"""

import os
import warnings
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from torch import nn

from elmo_bilm.dropins.elmo_lstm import ElmoLstm
from elmo_bilm.formats.hdf5 import Hdf5Sink
from elmo_bilm.formats.sink import Output, Sink, check_paths, write_chunks
from elmo_bilm.formats.text import (
    Item,
    Source,
    count_sentences,
    is_stream,
    read_chunks,
    source_name,
)
from elmo_bilm.model.bilm import BiLm, frozen, remove_sentence_boundaries
from elmo_bilm.model.characters import as_tokens, batch_char_ids, vocabulary_char_ids
from elmo_bilm.runtime.engine import (
    DEFAULT_MAX_TOKENS,
    Batching,
    embed_each,
    embed_file,
    file_layers,
    input_order_batching,
    same_words,
    sorted_batching,
)
from elmo_bilm.runtime.layers import LayerChoice, Layers
from elmo_bilm.runtime.mixes import ElmoMixes
from elmo_bilm.runtime.precision import set_precision
from elmo_bilm.sources.published import published_urls
from elmo_bilm.sources.resolver import load_bilm, pretrained_source
from elmo_bilm.utils.checks import whole_number
from elmo_bilm.utils.devices import Device, cuda_device_of, torch_device
from elmo_bilm.utils.files import UsageError
from elmo_bilm.utils.names import UserPath, user_path

# AllenNLP 0.9's module constants of `allennlp.commands.elmo`, which libraries import (flair's
# `ELMoEmbeddings` reads the first two): its default biLM, AllenNLP's `original` (what
# `ElmoEmbedder()` without files loads, by that name), and the batch size of `ElmoEmbedder`'s
# methods (the `elmo-embed` command's is 128).
DEFAULT_MODEL = "original"
DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE = published_urls(DEFAULT_MODEL)
DEFAULT_BATCH_SIZE = 64
batch_to_ids = batch_char_ids  # AllenNLP's name: tokenised sentences -> (batch, T, 50) ids


def _token_lists(batch: Sequence[Sequence[str]]) -> List[Sequence[str]]:
    """`batch` with each string sentence as its characters (AllenNLP's reading, which SeqVec's
    protein strings rely on), for any biLM's own `batch_to_ids`."""
    if isinstance(batch, str) or not isinstance(batch, Iterable):
        batch_char_ids(batch)  # the error that names the fix
    return [as_tokens(sentence) for sentence in batch]


class Elmo(ElmoMixes):
    """AllenNLP's `allennlp.modules.elmo.Elmo`: `num_output_representations` Eq. (1) mixes of one
    biLM pass, each with its own `softmax(w)` and `gamma`, and dropout (`ElmoMixes`).

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
    precision : `str`, optional
        The frozen biLM's arithmetic: `"float32"` (the default for files), `"bfloat16"` or
        `"int8"` products for cheaper inference (`elmo_bilm.runtime.precision`; a pass with
        gradients runs in float32). Not given with `module`: the module's own, as it is.
    stateful : `bool`, optional (default = `True`)
        Carry LSTM states between batches as AllenNLP's `Elmo` does (its only mode): row `i`
        of a batch starts from the final states of row `i` of the batch before (rows a batch
        has not had yet start from zero); `reset_states()` forgets them. `False` starts every
        sentence from zero, so a sentence's vectors do not depend on the batches before it.
        Set on the biLM, so an `Elmo` sharing a `module` shares its states.
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
        precision: Optional[str] = None,
        stateful: bool = True,
    ) -> None:
        if module is not None and (options_file is not None or weight_file is not None):
            raise UsageError("give either module or options_file + weight_file")
        bilm = _bilm_module(module, "Elmo's module") if module is not None else None
        bilm = bilm if bilm is not None else load_bilm(options_file, weight_file)
        bilm = _with_precision(bilm, precision, module is not None)
        bilm.set_stateful(stateful)
        super().__init__(
            bilm,
            [dropout] * num_output_representations,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            layers="all"
            if scalar_mix_parameters is None
            else Layers(mix=tuple(scalar_mix_parameters)),
        )
        self.keep_sentence_boundaries = keep_sentence_boundaries
        if vocab_to_cache is not None:
            words = vocabulary_char_ids(vocab_to_cache, self.bilm.batch_to_ids)
            self.register_buffer("word_char_ids", words, persistent=False)
        else:
            self.word_char_ids = None

    @classmethod
    def from_pretrained(
        cls, name: str, num_output_representations: int = 1, **kwargs: Any
    ) -> "Elmo":
        """A published biLM by name (`small`, `medium`, `original`, `original_5.5b`: AllenNLP's
        files, downloaded once into the cache of `elmo_bilm.sources.published`), or a Hugging Face Hub
        repository (`ORG/REPO`, `ORG/REPO@REVISION` or `hf://ORG/REPO`; `elmo_bilm.sources.hub`), with
        `Elmo`'s other arguments; the same as `Elmo(name, None, ...)`."""
        return cls(pretrained_source(name), None, num_output_representations, **kwargs)

    @property
    def dropout(self) -> nn.Module:
        """The dropout on the representations (the same for each; `dropouts` holds one a mix)."""
        return self.dropouts[0] if len(self.dropouts) else nn.Dropout(0.0)

    @property
    def stateful(self) -> bool:
        """Whether LSTM states carry from one batch to the next (`stateful=True`)."""
        return self.bilm.lstm.stateful

    def reset_states(self) -> None:
        """Forget the carried LSTM states: the next batch starts from zero, as the first did
        (AllenNLP: `elmo._elmo_lstm._elmo_lstm.reset_states()`, which works here too)."""
        self.bilm.lstm.reset_states()

    @property
    def _elmo_lstm(self) -> BiLm:
        """AllenNLP's name of `Elmo`'s biLM (an `_ElmoBiLm` there), which code handling the
        states reaches through: `elmo._elmo_lstm._elmo_lstm.reset_states()` or `._states`."""
        return self.bilm

    def forward(
        self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
    ) -> Dict[str, Any]:
        """Mix the biLM's layers as AllenNLP does: over every position of the sentences with their
        `<S>`/`</S>` (the layer norm's statistics include them), then, unless
        `keep_sentence_boundaries`, without the boundaries and zero at padding.

        `inputs` `(..., T, 50)` and `word_inputs` `(..., T)` may have extra leading dimensions
        (say `(batch, n_sentences, T, 50)`); the outputs keep them."""
        char_ids, leading = self._character_ids(inputs, word_inputs)
        mask = (char_ids > 0).any(-1)
        output = self.bilm_layers(char_ids, mask=mask, keep_sentence_boundaries=True)
        layers, bounded_mask = output["activations"], output["mask"]

        def trim(mixed: torch.Tensor) -> torch.Tensor:
            return (
                mixed if self.keep_sentence_boundaries else remove_sentence_boundaries(mixed, mask)
            )

        representations = self.mix(layers, bounded_mask, trim)
        out_mask = bounded_mask if self.keep_sentence_boundaries else mask
        return {
            "elmo_representations": [r.reshape(leading + r.shape[1:]) for r in representations],
            "mask": out_mask.reshape(leading + out_mask.shape[1:]),
        }

    def _character_ids(
        self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor]
    ) -> Tuple[torch.Tensor, Tuple[int, ...]]:
        """`(rows, T, 50)` character ids (looked up from `word_inputs` through the cached
        vocabulary when both are there) and the leading dimensions that `rows` flattens."""
        if word_inputs is not None and self.word_char_ids is None:
            warnings.warn(
                "word_inputs were passed to Elmo without vocab_to_cache: they are ignored and the "
                "character ids used (as AllenNLP does)",
                stacklevel=3,
            )
            word_inputs = None
        if word_inputs is not None:
            ids = self.word_char_ids[word_inputs.flatten(0, -2)]
            return ids, tuple(word_inputs.shape[:-1])
        if inputs.dim() < 3:
            raise UsageError(
                f"character ids must be (batch, timesteps, 50), got shape {tuple(inputs.shape)}"
            )
        return inputs.flatten(0, -3), tuple(inputs.shape[:-2])


class _ElmoCharacterEncoder(nn.Module):
    """AllenNLP's `_ElmoCharacterEncoder`: the biLM's context-free token layer (character CNN,
    highways, projection) with `<S>` and `</S>` added, `forward(inputs (batch, T, 50))` ->
    `{"token_embedding": (batch, T + 2, dim), "mask": (batch, T + 2)}`. Zero at padding (where
    AllenNLP's holds the CNN of an all-padding word; the mask says which positions count).

    # Parameters

    options_file, weight_file : `str`
        Any biLM source `Elmo` reads (bilm-tf files, URLs, a published name alone).
    requires_grad : `bool`, optional (default = `False`)
    """

    def __init__(self, options_file: str, weight_file: str, requires_grad: bool = False) -> None:
        super().__init__()
        self._setup(load_bilm(options_file, weight_file), requires_grad)
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(requires_grad)

    def _setup(self, bilm: BiLm, requires_grad: bool) -> None:
        self.bilm = bilm
        self.requires_grad = requires_grad
        self.output_dim = bilm.projection_dim

    @classmethod
    def around(cls, bilm: BiLm, requires_grad: bool = False) -> "_ElmoCharacterEncoder":
        """The token layer of a biLM already in memory (parameters shared): `_ElmoBiLm`'s."""
        encoder = cls.__new__(cls)
        nn.Module.__init__(encoder)
        encoder._setup(bilm, requires_grad)
        return encoder

    def get_output_dim(self) -> int:
        """The token vectors' width (the biLM's projection)."""
        return self.output_dim

    def forward(self, inputs: torch.Tensor) -> Dict[str, torch.Tensor]:
        """`inputs` `(batch, T, 50)` character ids -> token vectors and mask with boundaries."""
        mask = (inputs > 0).any(-1)
        ids, bounded = self.bilm.add_boundaries(inputs, mask)
        if self.requires_grad:
            token = self.bilm.char_cnn(ids, bounded)
        else:
            with frozen(self.bilm):
                token = self.bilm.char_cnn(ids, bounded)
        return {"token_embedding": token, "mask": bounded}


class _ElmoBiLm(nn.Module):
    """AllenNLP's `_ElmoBiLm`: every layer of the biLM with `<S>` and `</S>` kept,
    `forward(inputs (batch, T, 50), word_inputs=None)` -> `{"activations": [(batch, T + 2,
    2 * proj)] * num_layers, "mask": (batch, T + 2)}`, layer 0 the token layer twice. Stateful,
    as AllenNLP's: row `i` starts from the states row `i` of the batch before ended with
    (`_elmo_lstm.reset_states()` forgets them).

    # Parameters

    options_file, weight_file : `str`
        Any biLM source `Elmo` reads.
    requires_grad : `bool`, optional (default = `False`)
    vocab_to_cache : `List[str]`, optional
        Words whose character ids are looked up by index: `forward` may then take `word_inputs`
        `(batch, T)` (0 = padding); ids outside the vocabulary fall back to `inputs`, as in
        AllenNLP.
    """

    def __init__(
        self,
        options_file: str,
        weight_file: str,
        requires_grad: bool = False,
        vocab_to_cache: Optional[List[str]] = None,
    ) -> None:
        super().__init__()
        self.bilm = load_bilm(options_file, weight_file)
        self.bilm.set_stateful(True)
        self._requires_grad = requires_grad
        for parameter in self.bilm.parameters():
            parameter.requires_grad_(requires_grad)
        self.num_layers = self.bilm.num_layers
        self.register_buffer("word_char_ids", None, persistent=False)
        if vocab_to_cache:
            self.create_cached_cnn_embeddings(vocab_to_cache)

    def create_cached_cnn_embeddings(self, tokens: List[str]) -> None:
        """Look words up by index from now on: word id `i` is `tokens[i]` (0 = padding)."""
        words = vocabulary_char_ids(tokens, self.bilm.batch_to_ids)
        self.word_char_ids = words.to(self.bilm.char_cnn.char_embedding.weight.device)

    @property
    def _token_embedder(self) -> _ElmoCharacterEncoder:
        """AllenNLP's name of the token layer: an `_ElmoCharacterEncoder` sharing the biLM's."""
        return _ElmoCharacterEncoder.around(self.bilm, self._requires_grad)

    @property
    def _elmo_lstm(self) -> ElmoLstm:
        """AllenNLP's name of the LSTM: an `ElmoLstm` over the biLM's stack (the same states)."""
        return ElmoLstm.around(self.bilm.lstm, self._requires_grad)

    def get_output_dim(self) -> int:
        """The width of each layer (twice the biLM's projection)."""
        return self.bilm.get_output_dim()

    def forward(
        self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
    ) -> Dict[str, Any]:
        """Every layer and the mask, `<S>`/`</S>` included (see the class)."""
        char_ids = inputs
        table = self.word_char_ids
        if table is not None and word_inputs is not None:
            if word_inputs.numel() == 0 or int(word_inputs.max()) < table.shape[0]:
                char_ids = table[word_inputs]
        mask = (char_ids > 0).any(-1)
        if self._requires_grad:
            output = self.bilm(char_ids, mask, keep_sentence_boundaries=True)
        else:
            with frozen(self.bilm):
                output = self.bilm(char_ids, mask, keep_sentence_boundaries=True)
        return {"activations": output["activations"], "mask": output["mask"]}


def _bilm_module(module: Any, what: str) -> BiLm:
    """`module` if it is a biLM in memory (AllenNLP's `_ElmoBiLm`: the biLM it wraps), else one
    line: a name, None or another module ended in an AttributeError or loaded the default."""
    if isinstance(module, _ElmoBiLm):
        return module.bilm
    if not isinstance(module, BiLm):
        raise UsageError(
            f"{what} must be a BiLm in memory (elmo_bilm.sources.resolver.load_bilm), got "
            f"{type(module).__name__}; pass a biLM's name or files as options_file "
            "(ElmoEmbedder('wikipedia'), Elmo('wikipedia', None))"
        )
    return module


def _with_precision(bilm: BiLm, precision: Optional[str], given: bool) -> BiLm:
    """`bilm` in `precision`; None: float32 for a biLM loaded from files, a biLM handed over
    (`module=`, `from_bilm`) as it is (its `set_precision` kept, not silently undone)."""
    if precision is None:
        if given:
            return bilm
        precision = "float32"
    return set_precision(bilm, precision)


def _default_bilm() -> BiLm:
    """AllenNLP 0.9's default biLM, `original`, through the resolver and its cache; offline or
    unreachable, one line naming the file to place where (or the URL to fetch), and the way to
    another biLM."""
    try:
        return load_bilm(DEFAULT_MODEL)
    except OSError as error:
        raise OSError(
            f"ElmoEmbedder() without files loads AllenNLP 0.9's default biLM {DEFAULT_MODEL!r}, "
            f"which is not in the cache yet: {_one_line(error)}; or name a biLM (e.g. "
            "ElmoEmbedder('wikipedia'), the one shipped with this package)"
        ) from None


def _one_line(error: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(error).split()) or type(error).__name__


class ElmoEmbedder:
    """AllenNLP 0.9's `allennlp.commands.elmo.ElmoEmbedder`: every biLM layer of tokenised
    sentences as numpy arrays `(3, n_tokens, dim)` (more layers for deeper biLMs).

    # Parameters

    options_file, weight_file : `str`, optional
        bilm-tf files, paths or URLs, or any biLM source named alone (as `Elmo`: a published
        name, `wikipedia` for the biLM shipped with this package, a folder, an archive, ...);
        neither: AllenNLP's `original` biLM (`DEFAULT_MODEL`), as in 0.9, downloaded once into
        the cache of `elmo_bilm.sources.published` (offline, the error names the file to place
        there and its URL).
    cuda_device : `int`, optional (default = `-1`)
        GPU id, -1 for the CPU. Read on every batch, as in 0.9: code that moves a loaded
        embedder sets it and moves `elmo_bilm` (flair does after unpickling).
    precision : `str`, optional
        `"float32"` (the default for files), `"bfloat16"` or `"int8"` products for cheaper
        inference (`elmo_bilm.runtime.precision`). Not given with `module` (and `from_bilm`):
        the biLM's own precision, as it is.
    stateful : `bool`, optional (default = `True`)
        Carry LSTM states between batches as AllenNLP 0.9's embedder did (its biLM was
        stateful): each row of a batch starts from the final states of the same row of the
        batch before, and `embed_sentences` and `embed_file` run batches of `batch_size`
        sentences in input order (no token budget), as 0.9 did, so the vectors equal 0.9's call
        after call; `reset_states()` forgets the states. `False` starts every sentence from zero:
        a sentence's vectors do not depend on the sentences embedded before it, and
        `embed_sentences` and `embed_file` batch by length within `max_tokens`.
    max_tokens : `int`, optional (default = `4096`)
        The token budget of a batch of one sentence (`embed_sentence`, `embed_batch` of one):
        a longer one (its tokens and two boundaries) runs in exact pieces of this many positions
        (`elmo_bilm.model.chunked`, stateful or not), so that the returned array is all it holds
        beyond one piece; None: one pass, whatever the length.
    """

    def __init__(
        self,
        options_file: Optional[UserPath] = None,
        weight_file: Optional[UserPath] = None,
        cuda_device: Device = -1,
        precision: Optional[str] = None,
        stateful: bool = True,
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
        *,
        module: Optional[BiLm] = None,
    ) -> None:
        whole_number(max_tokens, "max_tokens", optional=True)
        self.max_tokens = max_tokens
        # an id as AllenNLP 0.9's; "cpu", "cuda:1" or a torch.device as PyTorch users write it;
        # anything else one line (cuda_device="gpu" was a bare TypeError of `<`)
        self.cuda_device = cuda_device_of(cuda_device)
        # read as every biLM source is first: "  " and b"" are nothing named (the default
        # biLM, as ElmoEmbedder()), a pathlib.Path its path
        options_file = user_path(options_file, "the options file")
        weight_file = user_path(weight_file, "the weight file")
        if module is not None and (options_file is not None or weight_file is not None):
            raise UsageError("give either module or options_file + weight_file")
        if module is not None:
            bilm = _bilm_module(module, "ElmoEmbedder's module")
        elif options_file is None and weight_file is None:
            bilm = _default_bilm()
        else:
            bilm = load_bilm(options_file, weight_file)
        self.elmo_bilm = _with_precision(bilm.to(self.device).eval(), precision, module is not None)
        self.elmo_bilm.set_stateful(stateful)

    @classmethod
    def from_bilm(
        cls, bilm: BiLm, cuda_device: Device = -1, stateful: bool = True
    ) -> "ElmoEmbedder":
        """An embedder around a biLM already in memory (flair's saved models rebuild theirs
        from a state dict), moved to `cuda_device`, in eval mode, stateful or not as the
        constructor's `stateful` (the mode is set on the biLM, with no states carried yet), in
        the precision it has (`set_precision`: an int8 biLM stays int8)."""
        bilm = _bilm_module(bilm, "ElmoEmbedder.from_bilm's bilm")
        return cls(cuda_device=cuda_device, stateful=stateful, module=bilm)

    @property
    def stateful(self) -> bool:
        """Whether LSTM states carry from one batch to the next (`stateful=True`)."""
        return self.elmo_bilm.stateful

    def reset_states(self) -> None:
        """Forget the carried LSTM states: the next batch starts from zero, as the first did."""
        self.elmo_bilm.reset_states()

    @property
    def states(self) -> Tuple[torch.Tensor, ...]:
        """The biLM's carried LSTM states (`BiLm.states`; `()`: zero states)."""
        return self.elmo_bilm.states

    @states.setter
    def states(self, states: Sequence[torch.Tensor]) -> None:
        """Carry `states` (as `states` gave them; `()`: zero states) into the next batch."""
        self.elmo_bilm.states = states

    @property
    def device(self) -> torch.device:
        """Where the inputs go: `cuda_device`'s GPU, or the CPU for -1."""
        return torch_device(self.cuda_device)

    def batch_to_embeddings(
        self, batch: Sequence[Sequence[str]]
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """`(activations (batch, n_layers, T, dim), mask (batch, T))` on the model's device."""
        with torch.no_grad():
            ids = self.elmo_bilm.batch_to_ids(_token_lists(batch))
            output = self.elmo_bilm(ids.to(self.device))
        return torch.stack(output["activations"], dim=1), output["mask"]

    def embed_sentence(self, sentence: Sequence[str]) -> numpy.ndarray:
        """`(n_layers, n_tokens, dim)` for one tokenised sentence (a list of tokens; a string
        is its characters, one token each, as in AllenNLP: SeqVec's `embed_sentence(protein)`
        embeds residue by residue)."""
        return self.embed_batch([sentence])[0]

    def embed_batch(
        self, batch: Sequence[Sequence[str]], *, layers: LayerChoice = "all"
    ) -> List[numpy.ndarray]:
        """One `(n_layers, n_tokens, dim)` array per sentence (an empty sentence: zero tokens;
        a string: its characters). Stateful: the batch is one biLM pass, as given (AllenNLP
        0.9's meaning); stateless: passes of similar lengths within `max_tokens` (the vectors
        are the same). A batch of one sentence longer than `max_tokens` runs in exact pieces.
        `layers` (ours, keyword): the layers kept (`Layers`), "all" as in 0.9."""
        batch = _token_lists(batch)
        size = max(len(batch), 1)
        batching = input_order_batching(size) if self.stateful else self._sorted(size)
        return list(self._each(batch, batching, layers, self._max_tokens()))

    def embed_sentences(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
        *,
        layers: LayerChoice = "all",
    ) -> Iterator[numpy.ndarray]:
        """Lazily, in input order. Stateful (the default): batches of `batch_size` sentences in
        input order, as AllenNLP 0.9 ran them (`max_tokens` is checked, not applied; a last
        batch that is one empty sentence is skipped, as 0.9's `embed_batch` skips `[[]]`).
        Stateless: reads `16 * batch_size` sentences at a time, embeds them in batches of
        similar length (order is free) of at most `batch_size` sentences and `max_tokens` padded
        tokens. A string sentence is its characters (as in AllenNLP); one string in place of the
        sentences is a `TypeError`, as in `embed_batch`. `layers` (ours, keyword): the layers
        kept."""
        whole_number(batch_size, "batch_size")
        whole_number(max_tokens, "max_tokens", optional=True)
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            batch_char_ids(sentences)  # the error that names the fix, as `embed_batch`'s
        tokens = (as_tokens(sentence) for sentence in sentences)
        if self.stateful:  # 0.9's order: batches of `batch_size` in input order
            batching = input_order_batching(batch_size)
            yield from self._each(tokens, batching, layers, self._max_tokens())
            return
        yield from self._each(tokens, self._sorted(batch_size, max_tokens), layers, max_tokens)

    def _max_tokens(self) -> Optional[int]:
        return getattr(self, "max_tokens", DEFAULT_MAX_TOKENS)  # embedders pickled before it

    def _sorted(self, batch_size: int, max_tokens: Optional[int] = None) -> Batching:
        """The stateless batching: length-sorted within `max_tokens` (the embedder's)."""
        return sorted_batching(batch_size, self._max_tokens() if max_tokens is None else max_tokens)

    def _each(
        self,
        sentences: Iterable[Sequence[str]],
        batching: Batching,
        layers: LayerChoice = "all",
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
        padded: bool = False,
    ) -> Iterator[numpy.ndarray]:
        """The engine's `embed_each` over this embedder's biLM and device: the adapters' one way
        in (their originals' batching, their layer choice). A batch of one empty sentence is not
        run, as AllenNLP 0.9's `embed_batch` does not run `[[]]` (its states stay); other empty
        sentences run as `<S> </S>` and move their rows' states, as in 0.9."""
        return embed_each(
            self.elmo_bilm,
            sentences,
            same_words,
            batching,
            self.device,
            layers,
            max_tokens,
            padded,
            skip_lone_empty=True,
        )

    def embed_file(
        self,
        input_file: Source,
        output_file_path: Union[str, "os.PathLike[str]", IO[bytes]],
        output_format: str = "all",
        batch_size: int = DEFAULT_BATCH_SIZE,
        forget_sentences: bool = False,
        use_sentence_keys: bool = False,
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    ) -> None:
        """The HDF5 file `elmo-embed` writes (one dataset per line; `output_format` "all", "top"
        or "average"); `input_file` is a path (a pipe or `/dev/stdin` too) or an open file object
        (text or binary: `io.StringIO`, `os.fdopen`, as 0.9 took), read once; `output_file_path` a
        path or a binary file open for reading and writing ("w+b": h5py writes into it). An existing
        output file is replaced, as AllenNLP 0.9's method did (atomically: the old file stays
        whole until the new one is complete). Stateful (the default): the lines run through
        `embed_sentences`, batches of `batch_size` in file order carrying the states, as 0.9's
        method ran them; stateless: the bulk path's length-sorted batches within `max_tokens`."""
        output: Output = output_file_path  # type: ignore[assignment]
        if isinstance(output_file_path, (str, os.PathLike)):
            output = os.fspath(output_file_path)
        if self.stateful:
            _embed_file_in_order(
                self,
                input_file,
                output,
                output_format,
                batch_size,
                forget_sentences,
                use_sentence_keys,
            )
            return
        embed_file(
            self.elmo_bilm,
            input_file,
            output,
            layers=output_format,
            batch_size=batch_size,
            cuda_device=self.cuda_device,
            overwrite=True,
            sentence_index=not forget_sentences,
            sentence_keys=use_sentence_keys,
            max_tokens=max_tokens,
        )


def _embed_file_in_order(
    embedder: ElmoEmbedder,
    input_file: Source,
    output_file: Output,
    output_format: str,
    batch_size: int,
    forget_sentences: bool,
    use_sentence_keys: bool,
) -> None:
    """AllenNLP 0.9's `embed_file` for a stateful embedder: the file's sentences through
    `embed_sentences` in file order, batches of `batch_size` carrying the states as 0.9's did
    (read in chunks of whole batches, so the batches are the same), the layers kept as
    `output_format` says (`file_layers`), written through the HDF5 sink `elmo-embed` writes
    through (the same checks and FILE:LINE errors), float32."""
    layers = file_layers(output_format)
    whole_number(batch_size, "batch_size")
    check_paths(input_file, output_file, overwrite=True)
    if not is_stream(input_file):
        count_sentences(input_file)  # every line checked (an empty one names FILE:LINE) first
    name = source_name(input_file)

    def make_sink(raw: Any) -> Sink:
        return Hdf5Sink(raw, name, "float32", not forget_sentences, use_sentence_keys)

    def pieces(chunk: List[Item]) -> Iterator[Tuple[List[Item], int, numpy.ndarray]]:
        sentences = [words for _, _, words in chunk]
        vectors = embedder.embed_sentences(sentences, batch_size, layers=layers)
        return (([item], 0, kept[None]) for item, kept in zip(chunk, vectors))

    chunks = read_chunks(input_file, 64 * batch_size)
    write_chunks(output_file, True, make_sink, chunks, pieces, empty=f"{name}: no sentences")
