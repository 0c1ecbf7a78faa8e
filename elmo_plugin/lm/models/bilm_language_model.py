"""Training the biLM: the joint forward + backward log-likelihood of Sec. 3.1."""

import logging
import math
from typing import Any, Dict, Optional, Tuple, cast

import torch
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.modules.sampled_softmax_loss import SampledSoftmaxLoss

from elmo_bilm.formats.bilm_tf import read_softmax
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.lm import bidirectional_nll, chunked_nll, softmax_nll
from elmo_bilm.model.vocab import UNK, read_vocab_file
from elmo_plugin.modules.bilm_loading import load_bilm_archive, load_bilm_or_archive

logger = logging.getLogger(__name__)


@Model.register("elmo_plugin_bilm")
class BiLmLanguageModel(Model):
    """The ELMo biLM as an AllenNLP Model: separate forward and backward LSTMs over a shared
    character-CNN token representation, and one softmax shared by both directions.

    The loss is the mean of the forward and backward per-token negative log-likelihoods. With
    `num_samples` the training loss is a sampled softmax (log-uniform sampler over a
    frequency-sorted vocabulary, logits corrected by the log expected counts, accidental hits
    removed: AllenNLP's `SampledSoftmaxLoss`, as bilm-tf); evaluation always uses the full softmax.
    Metrics: `perplexity_forward`, `perplexity_backward` and `perplexity` (of the mean loss),
    token-weighted over the epoch.

    The trained `bilm` is directly usable by `elmo_plugin_token_embedder` (`archive_file`),
    `elmo-embed --archive-file` and exportable with `allennlp elmo-export`.

    Registered as a `Model` with name "elmo_plugin_bilm".

    # Parameters

    vocab : `Vocabulary`
    options : `Dict[str, Any]`, optional
        bilm-tf style architecture (`char_cnn`, `lstm` sections) for a biLM trained from scratch.
    pretrained_options_file, pretrained_weight_file : `str`, optional
        Start from bilm-tf weights instead (domain fine-tuning, Supplement A.1). bilm-tf files hold
        no softmax, which then starts fresh; files written by `allennlp elmo-export` carry it, and
        with `pretrained_vocab_file` its rows are matched to this model's vocabulary by token.
    pretrained_vocab_file : `str`, optional
        The `vocab.txt` that goes with `pretrained_weight_file`'s softmax.
    pretrained_archive : `str`, optional
        Start from a `model.tar.gz` of this model (biLM and, if the vocabularies match, softmax).
    dropout : `float`, optional (default = `0.1`)
        On the LSTM inputs and on the top layer before the softmax (bilm-tf's 0.1).
    num_samples : `int`, optional
        Negative samples of the sampled softmax (bilm-tf: 8192); `None` = full softmax.
    lm_namespace : `str`, optional (default = `"lm_tokens"`)
    loss_scale : `float`, optional (default = the archive's with `pretrained_archive`, else `1.0`)
        Factor on the training loss (the per-token mean). bilm-tf differentiates the mean loss times
        its `unroll_steps` (20); with Adagrad's initial accumulator of 1.0 that scale sets the
        effective step size, so the pretraining configs use 20. Fine-tuning from an archive keeps
        the pretraining's scale (its Adagrad accumulators come along and were summed at that
        scale). Metrics are unaffected.
    softmax_chunk_tokens : `int`, optional (default = `1024`)
        The full softmax (evaluation, or training without `num_samples`) runs over this many
        target positions at a time, so its logits take `softmax_chunk_tokens x vocabulary` floats
        however large the batch (recomputed in the backward pass when training).
    """

    _padding_column: torch.Tensor
    _totals: torch.Tensor

    def __init__(
        self,
        vocab: Vocabulary,
        options: Optional[Dict[str, Any]] = None,
        pretrained_options_file: Optional[str] = None,
        pretrained_weight_file: Optional[str] = None,
        pretrained_vocab_file: Optional[str] = None,
        pretrained_archive: Optional[str] = None,
        dropout: float = 0.1,
        num_samples: Optional[int] = None,
        lm_namespace: str = "lm_tokens",
        loss_scale: Optional[float] = None,
        softmax_chunk_tokens: int = 1024,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        sources = [
            options is not None,
            pretrained_options_file is not None,
            pretrained_archive is not None,
        ]
        if sum(sources) != 1:
            raise ValueError(
                "give exactly one of options, pretrained_options_file (+ weight file), pretrained_archive"
            )
        pretrained_softmax = None
        pretrained_loss_scale = 1.0
        if options is not None:
            self.bilm = BiLm(options, dropout=dropout)
        elif pretrained_options_file is not None:
            if pretrained_weight_file is None:
                raise ValueError("pretrained_options_file needs pretrained_weight_file")
            self.bilm = load_bilm_or_archive(
                pretrained_options_file, pretrained_weight_file, dropout=dropout
            )
        else:
            assert pretrained_archive is not None  # exactly one source, checked above
            archived = load_bilm_archive(pretrained_archive)
            pretrained_loss_scale = archived.loss_scale
            self.bilm = archived.bilm
            self.bilm.set_dropout(dropout)
            if archived.vocab.get_token_to_index_vocabulary(
                lm_namespace
            ) == vocab.get_token_to_index_vocabulary(lm_namespace):
                pretrained_softmax = archived.softmax.state_dict()
            else:
                logger.warning(
                    "%s: vocabulary differs; the softmax starts fresh", pretrained_archive
                )
        self.lm_namespace = lm_namespace
        num_words = vocab.get_vocab_size(lm_namespace)
        self.num_samples = num_samples
        if num_samples is not None and num_samples >= num_words:
            raise ValueError(
                f"num_samples ({num_samples}) must be smaller than the vocabulary ({num_words}); "
                "use the full softmax (num_samples = null) for small vocabularies"
            )
        # One softmax for both directions; its sampler needs num_samples < num_words even when unused.
        self.softmax = SampledSoftmaxLoss(
            num_words,
            self.bilm.projection_dim,
            num_samples or max(1, num_words - 1),
            use_character_inputs=False,
        )
        # whether the softmax was pretrained with the biLM (a perplexity before training means something)
        self.softmax_pretrained = False
        if pretrained_softmax is not None:
            self.softmax.load_state_dict(pretrained_softmax)
            self.softmax_pretrained = True
        elif pretrained_weight_file is not None and pretrained_vocab_file is not None:
            self.softmax_pretrained = self._load_exported_softmax(
                pretrained_weight_file, pretrained_vocab_file
            )
        self.output_dropout = torch.nn.Dropout(dropout)
        padding_column = torch.zeros(num_words, dtype=torch.bool)
        padding_column[0] = vocab._padding_token in vocab.get_token_to_index_vocabulary(
            lm_namespace
        )
        self.register_buffer("_padding_column", padding_column, persistent=False)
        self.loss_scale = pretrained_loss_scale if loss_scale is None else loss_scale
        self.softmax_chunk_tokens = softmax_chunk_tokens
        # running sums on the model's device (no host sync per batch): forward nll, backward nll, targets
        self.register_buffer("_totals", torch.zeros(3, dtype=torch.float64), persistent=False)

    def softmax_parameters(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """The tied softmax's weight (`vocabulary x projection_dim`) and bias: plain parameters,
        since the softmax is built with `use_character_inputs=False`."""
        return cast(torch.Tensor, self.softmax.softmax_w), cast(
            torch.Tensor, self.softmax.softmax_b
        )

    def _load_exported_softmax(self, weight_file: str, vocab_file: str) -> bool:
        """Copy the rows of an exported softmax for every token of this vocabulary it knows;
        False when the file has no softmax (published bilm-tf weights)."""
        exported = read_softmax(weight_file)
        if exported is None:
            logger.info("%s has no softmax: it starts fresh", weight_file)
            return False
        weight, bias = exported
        lines = read_vocab_file(vocab_file)
        if len(lines) != weight.shape[0]:
            raise ValueError(
                f"{vocab_file} has {len(lines)} tokens but the softmax in {weight_file} has {weight.shape[0]} rows"
            )
        row_of = {token: row for row, token in enumerate(lines)}
        row_of[self.vocab._oov_token] = row_of.get(UNK, -1)
        found = 0
        softmax_w, softmax_b = self.softmax_parameters()
        with torch.no_grad():
            for token, index in self.vocab.get_token_to_index_vocabulary(self.lm_namespace).items():
                row = row_of.get(token, -1)
                if row >= 0:
                    softmax_w[index] = torch.from_numpy(weight[row])
                    softmax_b[index] = float(bias[row])
                    found += 1
        logger.info(
            "Softmax rows from %s for %d of %d tokens",
            weight_file,
            found,
            softmax_w.shape[0],
        )
        return found > 0

    def _full_softmax_nll(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        softmax_w, softmax_b = self.softmax_parameters()
        # the padding id is never a word: keep it out of the normalisation
        return softmax_nll(hidden, targets, softmax_w, softmax_b, self._padding_column)

    def _nll_sum(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.training and self.num_samples is not None:
            return self.softmax(hidden, targets)
        return chunked_nll(hidden, targets, self._full_softmax_nll, self.softmax_chunk_tokens)

    def forward(self, tokens: TextFieldTensors) -> Dict[str, torch.Tensor]:  # type: ignore[override]
        """`tokens`: sentences with `<S>`/`</S>`, indexed as `elmo` (characters) and `lm` (targets)."""
        char_ids = tokens["elmo"]["elmo_tokens"]
        targets = tokens["lm"]["tokens"]
        mask = targets > 0
        _, layers = self.bilm.encode(char_ids, mask)
        top = self.output_dropout(layers[-1])
        forward, backward, num_targets = bidirectional_nll(top, targets, mask, self._nll_sum)
        self._totals += torch.stack([forward.detach(), backward.detach(), num_targets]).to(
            self._totals.dtype
        )
        loss = 0.5 * (forward + backward) / num_targets.clamp(min=1)
        if self.training:
            loss = loss * self.loss_scale
        return {"loss": loss, "num_targets": num_targets}

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        forward, backward, count = self._totals.tolist()
        forward, backward = forward / max(count, 1.0), backward / max(count, 1.0)
        metrics = {
            "perplexity_forward": math.exp(min(forward, 50.0)),
            "perplexity_backward": math.exp(min(backward, 50.0)),
            "perplexity": math.exp(min(0.5 * (forward + backward), 50.0)),
        }
        if reset:
            self._totals.zero_()
        return metrics
