"""The bidirectional language model of ELMo: char-CNN token encoder + forward/backward LSTM stacks."""

import contextlib
import copy
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch import nn

from elmo_bilm.model.char_cnn import CharCnnEncoder, add_sentence_boundaries
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.model.lstm import ProjectedLstmStack
from elmo_bilm.utils.checks import true_or_false


class BiLm(nn.Module):
    """The biLM of Peters et al. (2018), Sec. 3.1 and 3.4, configured by a bilm-tf `options.json` dict.

    `forward` takes the character ids of AllenNLP's `elmo_characters` indexer (without sentence
    boundaries) and returns every layer: layer 0 is the token representation duplicated to
    `2 * projection_dim` (as bilm-tf and AllenNLP do), layers 1..L are `[forward; backward]`
    LSTM outputs. The model is stateless by default: each sentence starts from a zero LSTM
    state, so a sentence gets the same vectors whatever batch it is in. `set_stateful(True)`
    (`Elmo` and `ElmoEmbedder` set it by default) carries each row's final states into the next
    batch's same row, as AllenNLP's biLM does; `states` reads and sets them, `reset_states()`
    forgets them.

    # Parameters

    options : `Dict[str, Any]`
        bilm-tf options with `char_cnn` and `lstm` sections (see `../README.md`). Kept, so that
        an export writes them back.
    dropout : `float`, optional (default = `0.0`)
        Dropout on the LSTM inputs in training mode (bilm-tf trains with 0.1).
    initialise : `bool`, optional (default = `True`)
        Draw bilm-tf's initial weights; `False` is for a loader that overwrites every weight
        (at the paper size the draw is most of a load's time).
    """

    def __init__(
        self, options: Dict[str, Any], dropout: float = 0.0, initialise: bool = True
    ) -> None:
        super().__init__()
        self.options = copy.deepcopy(options)
        char_cnn = options["char_cnn"]
        lstm = options["lstm"]
        self.max_characters_per_token = int(char_cnn.get("max_characters_per_token", 50))
        self.projection_dim = int(lstm["projection_dim"])
        self.char_cnn = CharCnnEncoder(
            char_dim=int(char_cnn["embedding"]["dim"]),
            filters=char_cnn["filters"],
            n_highway=int(char_cnn["n_highway"]),
            projection_dim=self.projection_dim,
            activation=char_cnn.get("activation", "relu"),
            initialise=initialise,
        )
        self.lstm = ProjectedLstmStack(
            input_dim=self.projection_dim,
            dim=int(lstm["dim"]),
            projection_dim=self.projection_dim,
            n_layers=int(lstm["n_layers"]),
            cell_clip=lstm.get("cell_clip"),
            proj_clip=lstm.get("proj_clip"),
            use_skip_connections=bool(lstm.get("use_skip_connections", True)),
            dropout=dropout,
            initialise=initialise,
        )

    def set_dropout(self, dropout: float) -> None:
        """Set the dropout on the LSTM inputs (active in training mode only)."""
        self.lstm.dropout.p = dropout

    @property
    def stateful(self) -> bool:
        """Whether LSTM states carry from one batch to the next (AllenNLP's stateful biLM)."""
        return self.lstm.stateful

    def set_stateful(self, stateful: bool) -> None:
        """Carry LSTM states between batches (`True`, AllenNLP's mode) or start every sentence
        from zero (`False`), with no states carried yet. Anything but a bool (`"no"`, which
        `bool()` reads as true) is a one-line `UsageError`."""
        self.lstm.stateful = true_or_false(stateful, "stateful")
        self.lstm.reset_states()

    @property
    def states(self) -> Tuple[torch.Tensor, ...]:
        """The LSTM states carried into the next batch, `(h, c)` each `(layers, rows, [forward;
        backward])` (AllenNLP's layout), or `()` for zero states: what an adapter saves and
        restores (simple_elmo's sessions each keep their own)."""
        return self.lstm.states

    @states.setter
    def states(self, states: Optional[Sequence[torch.Tensor]]) -> None:
        """Carry `states` (as `states` gave them; `()` or None: zero states) into the next
        batch; a stateless biLM takes `()` only. States of another shape (another biLM's) are a
        one-line `UsageError` naming the shapes this biLM's LSTM expects."""
        if states is not None and not isinstance(states, torch.Tensor):
            states = tuple(states)
        self.lstm.states = states  # type: ignore[assignment]

    def reset_states(self) -> None:
        """Forget the carried LSTM states: the next batch starts from zero."""
        self.lstm.reset_states()

    @property
    def _elmo_lstm(self) -> ProjectedLstmStack:
        """AllenNLP's name of the LSTM stack inside its biLM (`_ElmoBiLm._elmo_lstm`), which
        flair's legacy `ELMoEmbeddings` reaches for after unpickling."""
        return self.lstm

    @property
    def num_layers(self) -> int:
        """Number of output layers: the token layer plus one per LSTM layer."""
        return self.lstm.n_layers + 1

    def get_output_dim(self) -> int:
        """The width of each layer's output: forward and backward projections side by side."""
        return 2 * self.projection_dim

    def encode(
        self, char_ids: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """The token layer `(batch, T, proj)` and LSTM layers `[(batch, T, 2 * proj)]` for ids
        that already hold `<S>`/`</S>` (as the LM corpus reader produces them)."""
        vectors, index = self.char_cnn.distinct_words(char_ids, mask)
        token = self.char_cnn.tokens(vectors, index, mask)
        return token, self.lstm(token, mask, distinct=(vectors, index))

    def batch_to_ids(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """The ids `forward` takes for tokenised sentences: AllenNLP's `batch_to_ids` here; a
        biLM with its own character vocabulary overrides it (`elmo_bilm.model.manylangs`)."""
        return batch_char_ids(sentences)

    def add_boundaries(
        self, char_ids: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """`<S>` ... `</S>` around each sentence (`add_sentence_boundaries`; overridden with the
        vocabulary's own markers as `batch_to_ids` is)."""
        return add_sentence_boundaries(char_ids, mask)

    def _empty(
        self, char_ids: torch.Tensor, mask: torch.Tensor, boundaries: bool
    ) -> Dict[str, Any]:
        timesteps = mask.shape[1] + (2 if boundaries else 0)
        token = char_ids.new_zeros((0, timesteps, self.projection_dim), dtype=torch.float32)
        layer = token.new_zeros((0, timesteps, self.get_output_dim()))
        return {
            "activations": [layer] * self.num_layers,
            "mask": mask.new_zeros((0, timesteps)),
            "token": token,
        }

    def forward(
        self,
        char_ids: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        keep_sentence_boundaries: bool = False,
    ) -> Dict[str, Any]:
        """Run the biLM.

        # Parameters

        char_ids : `torch.Tensor`
            `(batch, T, max_chars)` ids from the `elmo_characters` indexer, 0 = padding.
        mask : `torch.Tensor`, optional
            `(batch, T)`; derived from `char_ids` when not given.
        keep_sentence_boundaries : `bool`, optional (default = `False`)
            Return the `<S>`/`</S>` positions too (the LM training objective needs them).

        # Returns

        `{"activations": List[(batch, T', 2 * proj)], "mask": (batch, T'), "token": (batch, T', proj)}`
        """
        if mask is None:
            mask = (char_ids > 0).any(-1)
        if char_ids.shape[0] == 0:  # an empty batch: empty layers of the right widths
            return self._empty(char_ids, mask, keep_sentence_boundaries)
        char_ids, mask_with_boundaries = self.add_boundaries(char_ids, mask)
        token, lstm_layers = self.encode(char_ids, mask_with_boundaries)
        activations: List[torch.Tensor] = [torch.cat([token, token], dim=-1)] + lstm_layers
        if keep_sentence_boundaries:
            return {"activations": activations, "mask": mask_with_boundaries, "token": token}
        activations = [remove_sentence_boundaries(layer, mask) for layer in activations]
        return {"activations": activations, "mask": mask, "token": token[:, 1 : mask.shape[1] + 1]}


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`tensor` `(batch, T + 2, dim)` with `<S>` at position 0 and `</S>` after each sentence's
    last token, less those positions and zero at padding: `(batch, T, dim)` for `mask` `(batch,
    T)`, the mask without boundaries (AllenNLP's `remove_sentence_boundaries`)."""
    return tensor[:, 1 : mask.shape[1] + 1] * mask[..., None]


@contextlib.contextmanager
def frozen(bilm: nn.Module) -> Iterator[None]:
    """A frozen biLM's pass: eval mode (no dropout; the word cache may serve) and no gradient,
    its previous mode put back afterwards, also when the pass raises (the core's `Elmo` and the
    plugin's ELMo components share it)."""
    was_training = bilm.training
    bilm.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        bilm.train(was_training)
