"""The biLM's context-independent token encoder: a character CNN (Sec. 3.4 of Peters et al. 2018)."""

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import torch
from torch import nn

from elmo_bilm.model import derived, onednn
from elmo_bilm.utils.files import UsageError

# bilm-tf's character vocabulary: 256 byte values + 5 specials = 261 ids; AllenNLP's
# `elmo_characters` indexer shifts every id by one so that 0 can be padding, hence 262 rows here.
NUM_CHAR_IDS = 262
BEGINNING_OF_SENTENCE_CHAR = 256
END_OF_SENTENCE_CHAR = 257
BEGINNING_OF_WORD_CHAR = 258
END_OF_WORD_CHAR = 259
PADDING_CHAR = 260
# words convolved at once by `CharCnnEncoder.encode_words`, in order of length: each block is cut
# to its own longest word (docs/performance.md, "The char CNN by blocks of words")
WORD_BLOCK = 256


def _boundary_token(char: int, max_chars: int) -> torch.Tensor:
    """Character ids (already shifted by +1, as the indexer emits them) of `<S>` or `</S>`."""
    ids = torch.full((max_chars,), PADDING_CHAR + 1, dtype=torch.long)
    ids[0] = BEGINNING_OF_WORD_CHAR + 1
    ids[1] = char + 1
    ids[2] = END_OF_WORD_CHAR + 1
    return ids


def add_sentence_boundaries(
    char_ids: torch.Tensor, mask: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Wrap each sentence of `char_ids` (batch, T, max_chars) in `<S>` ... `</S>`.

    Returns the new ids (batch, T + 2, max_chars) and mask (batch, T + 2).
    """
    timesteps, max_chars = char_ids.shape[1:]
    lengths = mask.long().sum(-1)
    positions = torch.arange(timesteps + 2, device=char_ids.device)[None, :]
    bos = _boundary_token(BEGINNING_OF_SENTENCE_CHAR, max_chars).to(char_ids.device)
    eos = _boundary_token(END_OF_SENTENCE_CHAR, max_chars).to(char_ids.device)
    # selects rather than indexed writes: the same ids, and an ONNX export keeps batch and length
    # dynamic (`elmo_bilm.runtime.onnx`)
    out = nn.functional.pad(char_ids, (0, 0, 1, 1))
    out = torch.where((positions == (lengths + 1)[:, None])[..., None], eos, out)
    out = torch.where((positions == 0)[..., None], bos, out)
    return out, positions < (lengths + 2)[:, None]


def _own_product(name: str, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return layer(x)


def linear(n_in: int, n_out: int, initialise: bool = True) -> nn.Linear:
    """`nn.Linear`; with `initialise=False` its parameters are allocated but not drawn (built on
    the meta device, then given empty CPU tensors), for a loader that overwrites them."""
    if initialise:
        return nn.Linear(n_in, n_out)
    layer = nn.Linear(n_in, n_out, device="meta")
    layer.weight = nn.Parameter(torch.empty(n_out, n_in))
    layer.bias = nn.Parameter(torch.empty(n_out))
    return layer


class Highway(nn.Module):
    """bilm-tf's highway layer: `y = t * relu(W_T x + b_T) + (1 - t) * x`, `t = sigmoid(W_C x + b_C)`.

    Kept in bilm-tf's own parameterisation (`transform`, `carry`) so that loading and exporting
    weights is a plain transpose.
    """

    def __init__(self, dim: int, initialise: bool = True) -> None:
        super().__init__()
        self.transform = linear(dim, dim, initialise)
        self.carry = linear(dim, dim, initialise)
        if initialise:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """bilm-tf's initialisation: weights N(0, 1/dim), transform bias 0, carry bias -2 (the
        gate starts mostly closed, so the layer starts close to the identity)."""
        for linear in (self.transform, self.carry):
            nn.init.normal_(linear.weight, 0.0, linear.in_features**-0.5)
        nn.init.zeros_(self.transform.bias)
        nn.init.constant_(self.carry.bias, -2.0)

    def forward(
        self,
        inputs: torch.Tensor,
        product: Callable[[str, nn.Linear, torch.Tensor], torch.Tensor] = _own_product,
    ) -> torch.Tensor:
        """`product(name, linear, x)` computes `linear(x)` for the layers `"carry"` and
        `"transform"` (by default the layers themselves; the encoder's packed products)."""
        gate = torch.sigmoid(product("carry", self.carry, inputs))
        return (
            gate * torch.relu(product("transform", self.transform, inputs)) + (1.0 - gate) * inputs
        )


class CharCnnEncoder(nn.Module):
    """Character embeddings -> n-gram convolutions with max-pooling -> highway layers -> projection.

    # Parameters

    char_dim : `int`
        Size of a character embedding (bilm-tf `char_cnn.embedding.dim`).
    filters : `Sequence[Sequence[int]]`
        `[width, n_filters]` pairs (bilm-tf `char_cnn.filters`).
    n_highway : `int`
        Number of highway layers.
    projection_dim : `int`
        Output size (the LSTM's `projection_dim`).
    activation : `str`, optional (default = `"relu"`)
        `"relu"` or `"tanh"`, applied after max-pooling as in bilm-tf.
    word_cache_size : `int`, optional (default = `50000`)
        In inference (eval mode, no gradient), the vectors of up to this many distinct words are
        kept, so a word is encoded once however many batches it appears in. The cache empties
        itself whenever any weight of the encoder changes (optimizer step, `load_state_dict`,
        an in-place edit, through `.data` too: it compares the weights with a copy taken when it
        filled), so it is never stale. A cached vector equals the uncached one up to float32
        rounding (it was computed in another batch); `cache_state` / `load_cache_state` carry
        the cache through a checkpoint, so a resumed run serves the very same bits. 0 turns it
        off.
    initialise : `bool`, optional (default = `True`)
        Draw bilm-tf's initial weights; `False` leaves them to a loader that overwrites them all.
    """

    # the id that pads a word after its end-of-word mark (a class attribute, so that encoders
    # pickled before it existed unpickle with bilm-tf's; `elmo_bilm.model.manylangs` sets its own)
    padding_id: int = PADDING_CHAR + 1

    # the inference precision `elmo_bilm.runtime.precision.set_precision` set (a class attribute: encoders
    # pickled before it existed unpickle with the default)
    precision: str = "float32"
    _packed: Optional[onednn.PackedWeights] = None
    # the `derived.fixed_weights` run in which the word cache was last checked against the weights
    _cache_checked_in: Optional[object] = None

    def __init__(
        self,
        char_dim: int,
        filters: Sequence[Sequence[int]],
        n_highway: int,
        projection_dim: int,
        activation: str = "relu",
        word_cache_size: int = 50000,
        initialise: bool = True,
    ) -> None:
        super().__init__()
        if activation not in ("relu", "tanh"):
            raise UsageError(f"char_cnn activation must be 'relu' or 'tanh', got {activation!r}")
        self.activation = activation
        self.filters: List[Tuple[int, int]] = [(int(w), int(n)) for w, n in filters]
        self.char_embedding = nn.Embedding(NUM_CHAR_IDS, char_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(char_dim, num, kernel_size=width) for width, num in self.filters
        )
        n_filters = sum(num for _, num in self.filters)
        self.highways = nn.ModuleList(Highway(n_filters, initialise) for _ in range(n_highway))
        self.projection = linear(n_filters, projection_dim, initialise)
        self.output_dim = projection_dim
        self.word_cache_size = word_cache_size
        self._word_cache: Dict[bytes, torch.Tensor] = {}
        self._cache_key_context: Tuple[object, ...] = ()
        self._cache_weights: List[torch.Tensor] = []  # the weights the cached vectors came from
        if initialise:
            self.reset_parameters()

    def conv_layers(self) -> List[nn.Conv1d]:
        """The convolutions, one per filter width (typed, for the loaders)."""
        return [cast(nn.Conv1d, conv) for conv in self.convolutions]

    def highway_layers(self) -> List["Highway"]:
        """The highway layers (typed, for the loaders)."""
        return [cast(Highway, highway) for highway in self.highways]

    def reset_parameters(self) -> None:
        """bilm-tf's initialisation for training from scratch: character embeddings U(-1, 1)
        (the padding row 0 stays zero), convolutions U(-0.05, 0.05) for relu (Kim et al. 2015) or
        N(0, 1/(width * char_dim)) for tanh, zero biases, projection N(0, 1/n_filters)."""
        with torch.no_grad():
            nn.init.uniform_(self.char_embedding.weight, -1.0, 1.0)
            self.char_embedding.weight[0].zero_()
        for (width, _), conv in zip(self.filters, self.conv_layers()):
            if self.activation == "relu":
                nn.init.uniform_(conv.weight, -0.05, 0.05)
            else:
                nn.init.normal_(
                    conv.weight, 0.0, (width * self.char_embedding.embedding_dim) ** -0.5
                )
            nn.init.zeros_(cast(torch.Tensor, conv.bias))  # Conv1d's bias=True default
        for highway in self.highway_layers():
            highway.reset_parameters()
        nn.init.normal_(self.projection.weight, 0.0, self.projection.in_features**-0.5)
        nn.init.zeros_(self.projection.bias)

    def clear_word_cache(self) -> None:
        """Forget every cached word vector (e.g. to time a first pass over new text)."""
        self._word_cache.clear()

    def _cache_context(self, device: torch.device) -> Tuple[object, ...]:
        """What the cached vectors depend on besides the words and the weights' values: the
        device, the autocast state there and the inference precision (a vector computed in bf16
        must not be served to a float32 pass)."""
        autocast = torch.is_autocast_enabled(device.type)
        dtype = torch.get_autocast_dtype(device.type) if autocast else None
        precision = () if self.precision == "float32" else (self.precision,)
        return (str(device), autocast, dtype, *precision)

    def _weights_unchanged(self) -> bool:
        """Whether every weight equals the copy taken when the cache (re)filled: exact, and it
        sees edits that bypass autograd's version counters (`.data`, `numpy()` views)."""
        weights = list(self.parameters())
        return len(weights) == len(self._cache_weights) and all(
            old.shape == new.shape
            and old.device == new.device
            and old.dtype == new.dtype  # `.double()` keeps the values: float32 vectors stale
            and torch.equal(old, new)
            for old, new in zip(self._cache_weights, weights)
        )

    def _reset_cache(self, context: Tuple[object, ...]) -> None:
        self._word_cache.clear()
        self._cache_key_context = context
        self._cache_weights = [p.detach().clone() for p in self.parameters()]

    def _encode_with_cache(self, words: torch.Tensor) -> torch.Tensor:
        """`encode_words` through the inference word cache."""
        context = self._cache_context(words.device)
        run = derived.fixed_run(list(self.parameters()))
        checked = run is not None and run is self._cache_checked_in
        if context != self._cache_key_context or not (checked or self._weights_unchanged()):
            self._reset_cache(context)
        self._cache_checked_in = run
        if len(words) == 0:  # an empty batch: nothing to look up (stack needs one tensor)
            return self.encode_words(words)
        rows = words.to(torch.int16).cpu().numpy()
        keys = [row.tobytes() for row in rows]
        missing = [i for i, key in enumerate(keys) if key not in self._word_cache]
        fresh = {}
        if missing:
            encoded = self.encode_words(words[missing])
            for position, i in enumerate(missing):
                fresh[keys[i]] = encoded[position]
                if len(self._word_cache) < self.word_cache_size:
                    # a copy: a view would keep the whole batch's tensor alive
                    self._word_cache[keys[i]] = encoded[position].clone()
        return torch.stack([fresh[key] if key in fresh else self._word_cache[key] for key in keys])

    def cache_state(self) -> Dict[str, Any]:
        """The word cache for a checkpoint, in insertion order: `words` (n, max_chars) int16
        character ids, `vectors` (n, projection_dim) on the CPU, and whether they were computed
        under autocast (and in which dtype). Empty when the weights changed since the cache
        filled (its entries are stale then, and the next pass would drop them)."""
        if not self._word_cache or not self._weights_unchanged():
            return {}
        keys = b"".join(self._word_cache)
        words = torch.frombuffer(bytearray(keys), dtype=torch.int16)
        return {
            "words": words.view(len(self._word_cache), -1).clone(),
            "vectors": torch.stack([v.detach().cpu() for v in self._word_cache.values()]),
            "autocast": self._cache_key_context[1:],
        }

    def load_cache_state(self, state: Dict[str, Any]) -> None:
        """Put back a `cache_state` taken with the current weights (a resumed run); entries
        computed under another autocast state are dropped at their first use, as ever."""
        device = self.projection.weight.device
        self._reset_cache(self._cache_context(device))
        if state:
            self._cache_key_context = (str(device), *state["autocast"])
            keys = state["words"].to(torch.int16).numpy()
            for key, vector in zip(keys, state["vectors"].to(device)):
                self._word_cache[key.tobytes()] = vector

    def encode_words(self, word_char_ids: torch.Tensor, trim: bool = True) -> torch.Tensor:
        """Encode a flat batch of words, `(n_words, max_chars)` -> `(n_words, projection_dim)`:
        `convolve_words`, the highway layers and the projection."""
        hidden = self.convolve_words(word_char_ids, trim)
        packed = self._packed_weights()
        for i, highway in enumerate(self.highway_layers()):
            hidden = highway(hidden, functools.partial(packed.linear, index=i))
        return packed.linear("projection", cast(nn.Linear, self.projection), hidden)

    def _packed_weights(self) -> onednn.PackedWeights:
        """oneDNN's packed copies of the highway and projection weights, for float32 CPU inference
        (`onednn.PackedWeights.linear`; made on first use, so encoders pickled before them load)."""
        if self._packed is None:
            self._packed = onednn.PackedWeights()
        return self._packed

    def _apply(self, fn, recurse: bool = True):  # type: ignore[no-untyped-def]
        """`.to()`, `.cuda()`, ...: the packs belong to the old tensors, drop them."""
        if self._packed is not None:
            self._packed.clear()
        return super()._apply(fn, recurse)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_packed"] = None  # opaque tensors: not copyable; rebuilt on use
        state["_cache_checked_in"] = None
        return state

    def convolve_words(self, word_char_ids: torch.Tensor, trim: bool = True) -> torch.Tensor:
        """The max-pooled convolutions of every filter width after the activation, `(n_words,
        n_filters)`.

        Exact shortcut (`trim`): every id after a word's end-of-word mark is the padding
        character, so all convolution windows that lie entirely in that padding give one value
        per filter. The words are convolved `WORD_BLOCK` at a time in order of length, each
        block's characters cut just after its longest word's real characters plus `width - 1`
        padding positions, and that all-padding value joins the max-pool in place of the windows
        cut off: a block of short words skips the long words' columns (docs/performance.md, "The
        char CNN by blocks of words"). `trim=False` convolves every column of all words at once,
        for a graph whose shapes must not depend on the data (`elmo_bilm.runtime.onnx`).
        """
        n_words, max_chars = word_char_ids.shape
        if not trim or not n_words:
            return self._pooled(word_char_ids, None)
        max_width = max(width for width, _ in self.filters)
        real = (word_char_ids != self.padding_id) & (word_char_ids != 0)
        lengths, order = real.sum(-1).sort()
        ends = range(WORD_BLOCK, n_words + WORD_BLOCK, WORD_BLOCK)
        longest = lengths[[min(end, n_words) - 1 for end in ends]].tolist()
        padding_ids = torch.full((1, max_width), self.padding_id, device=word_char_ids.device)
        padding = self.char_embedding(padding_ids).transpose(1, 2)
        cut_off = [
            conv(padding[:, :, :width])[:, :, 0]
            for (width, _), conv in zip(self.filters, self.conv_layers())
        ]
        blocks = []
        for end, block_longest in zip(ends, longest):
            kept = min(max_chars, block_longest + max_width - 1)
            block = word_char_ids[order[end - WORD_BLOCK : end], :kept]
            blocks.append(self._pooled(block, cut_off if kept < max_chars else None))
        return torch.cat(blocks).index_select(0, order.argsort())

    def _pooled(
        self, word_char_ids: torch.Tensor, cut_off: Optional[List[torch.Tensor]]
    ) -> torch.Tensor:
        """`convolve_words` of words convolved at once, each width's max joined with its
        all-padding value in `cut_off` when columns were cut off."""
        chars = self.char_embedding(word_char_ids).transpose(1, 2)
        pooled = []
        for k, conv in enumerate(self.conv_layers()):
            values = conv(chars).amax(dim=-1)
            pooled.append(values if cut_off is None else torch.maximum(values, cut_off[k]))
        hidden = torch.cat(pooled, dim=-1)
        return torch.relu(hidden) if self.activation == "relu" else torch.tanh(hidden)

    def distinct_words(
        self, char_ids: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Encode each distinct word of the batch once.

        Returns `(vectors (U, projection_dim), index (batch, T))`: position `(b, t)` holds word
        `vectors[index[b, t]]` (index 0 at padding). Sentences repeat words a lot, and the CNN
        plus highway layers are most of the biLM's inference cost.
        """
        batch_size, timesteps, max_chars = char_ids.shape
        flat_mask = mask.reshape(-1)
        words, inverse = torch.unique(
            char_ids.reshape(-1, max_chars)[flat_mask], dim=0, return_inverse=True
        )
        if self.word_cache_size and not self.training and not torch.is_grad_enabled():
            vectors = self._encode_with_cache(words)
        else:
            vectors = self.encode_words(words)
        index = inverse.new_zeros(batch_size * timesteps)
        index[flat_mask] = inverse
        return vectors, index.view(batch_size, timesteps)

    def forward(self, char_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`(batch, T, max_chars)` -> `(batch, T, projection_dim)`, zero at padding."""
        vectors, index = self.distinct_words(char_ids, mask)
        return self.tokens(vectors, index, mask)

    @staticmethod
    def tokens(vectors: torch.Tensor, index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Token vectors `(batch, T, dim)` from `distinct_words`' output, zero at padding."""
        out = vectors.new_zeros(index.shape + vectors.shape[-1:])
        out[mask] = vectors[index[mask]]
        return out
