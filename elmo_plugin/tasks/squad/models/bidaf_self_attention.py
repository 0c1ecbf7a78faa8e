"""The SQuAD baseline of Peters et al. (2018): Clark and Gardner's (2017) BiDAF + self-attention."""

from typing import Any, Dict, List, Optional

import torch
from allennlp.common.checks import check_dimensions_match
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.modules import InputVariationalDropout, Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.matrix_attention import LinearMatrixAttention
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import BooleanAccuracy, CategoricalAccuracy
from allennlp_models.rc.metrics import SquadEmAndF1


def best_span(
    start_log_probs: torch.Tensor,
    end_log_probs: torch.Tensor,
    mask: torch.BoolTensor,
    max_length: int,
) -> torch.Tensor:
    """`(batch, 2)` inclusive `(start, end)` maximising `start + end` log-probabilities over
    spans inside `mask` with `start <= end < start + max_length`."""
    length = start_log_probs.size(1)
    positions = torch.arange(length, device=start_log_probs.device)
    width = positions[None, :] - positions[:, None]
    valid = (width >= 0) & (width < max_length) & mask[:, :, None] & mask[:, None, :]
    scores = (start_log_probs[:, :, None] + end_log_probs[:, None, :]).masked_fill(
        ~valid, float("-inf")
    )
    flat = scores.view(scores.size(0), -1).argmax(-1)
    return torch.stack([flat // length, flat % length], dim=-1)


@Model.register("elmo_plugin_bidaf_self_attention")
class BidafSelfAttention(Model):
    """The simplified Clark and Gardner (2017) model, Peters et al.'s SQuAD baseline (Supplement
    A.4): token embeddings (GloVe + char CNN; with `elmo_plugin_placement`, ELMo too), a shared
    bidirectional GRU over question and passage (`phrase_layer`; wrap it in
    `elmo_plugin_output_elmo` for ELMo at its output), BiDAF bi-attention
    (`[h; c2q; h * c2q; q2c * h]`, trilinear similarity), a linear+ReLU layer, a residual
    self-attention layer (`residual_encoder` GRU, the same attention passage-to-passage with the
    diagonal masked, `[s; a; s * a]`, linear+ReLU, added to its input), then span prediction: a
    GRU + linear layer for the start, and a GRU over `[x; start GRU states]` + linear for the end.
    Variational dropout before every GRU and linear layer. Loss: NLL of the gold start plus the
    gold end; prediction: the best span of at most `max_span_length` tokens. Metrics: start / end /
    span accuracy and the official SQuAD 1.1 EM and F1 (allennlp-models' `SquadEmAndF1`, which
    runs the official evaluation functions against every gold answer text).

    Registered as a `Model` with name "elmo_plugin_bidaf_self_attention".

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds question and passage.
    phrase_layer : `Seq2SeqEncoder`
        The shared contextual encoder (bidirectional GRU of 90 in the paper).
    residual_encoder : `Seq2SeqEncoder`
        The self-attention layer's GRU; input `hidden_dim`.
    span_start_encoder : `Seq2SeqEncoder`
        Input `hidden_dim`.
    span_end_encoder : `Seq2SeqEncoder`
        Input `hidden_dim` + the start encoder's output.
    hidden_dim : `int`, optional (default = `180`)
        Width of the linear+ReLU layers.
    dropout : `float`, optional (default = `0.2`)
        Variational dropout.
    max_span_length : `int`, optional (default = `17`)
        The longest answer predicted, in tokens.
    initializer : `InitializerApplicator`, optional

    Predictor: allennlp-models' "reading_comprehension" (`{"question", "passage"}`).
    """

    default_predictor = "reading_comprehension"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        phrase_layer: Seq2SeqEncoder,
        residual_encoder: Seq2SeqEncoder,
        span_start_encoder: Seq2SeqEncoder,
        span_end_encoder: Seq2SeqEncoder,
        hidden_dim: int = 180,
        dropout: float = 0.2,
        max_span_length: int = 17,
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        check_dimensions_match(
            text_field_embedder.get_output_dim(),
            phrase_layer.get_input_dim(),
            "embedding dim",
            "phrase layer input dim",
        )
        check_dimensions_match(
            hidden_dim, residual_encoder.get_input_dim(), "hidden_dim", "residual encoder input dim"
        )
        check_dimensions_match(
            hidden_dim,
            span_start_encoder.get_input_dim(),
            "hidden_dim",
            "span start encoder input dim",
        )
        check_dimensions_match(
            hidden_dim + span_start_encoder.get_output_dim(),
            span_end_encoder.get_input_dim(),
            "hidden_dim + span start encoder output dim",
            "span end encoder input dim",
        )
        self._text_field_embedder = text_field_embedder
        self._phrase_layer = phrase_layer
        # ELMo at the output (the embedder's placement says) joins the phrase layer's output last
        placement = getattr(text_field_embedder, "placement", None)
        at_output = placement is not None and placement.at_output
        self._elmo_output_dim = text_field_embedder.elmo_dim if at_output else 0  # type: ignore[attr-defined]
        encoded = phrase_layer.get_output_dim()
        self._attention = LinearMatrixAttention(encoded, encoded, combination="x,y,x*y")
        self._attended = torch.nn.Linear(4 * encoded, hidden_dim)
        self._residual_encoder = residual_encoder
        residual = residual_encoder.get_output_dim()
        self._self_attention = LinearMatrixAttention(residual, residual, combination="x,y,x*y")
        self._self_attended = torch.nn.Linear(3 * residual, hidden_dim)
        # Every score passes through a softmax (or a max), which a constant shift leaves unchanged:
        # the attentions' scalar bias would only ever get rounding noise as its gradient. It stays 0.
        for attention in (self._attention, self._self_attention):
            attention._bias.requires_grad_(False)
        self._span_start_encoder = span_start_encoder
        self._span_end_encoder = span_end_encoder
        # no bias: span logits go through a softmax over the passage (same reason as above)
        self._span_start_predictor = torch.nn.Linear(
            span_start_encoder.get_output_dim(), 1, bias=False
        )
        self._span_end_predictor = torch.nn.Linear(span_end_encoder.get_output_dim(), 1, bias=False)
        self._dropout = InputVariationalDropout(dropout)
        self._max_span_length = max_span_length
        self._span_start_accuracy = CategoricalAccuracy()
        self._span_end_accuracy = CategoricalAccuracy()
        self._span_accuracy = BooleanAccuracy()
        self._squad_metrics = SquadEmAndF1()
        initializer(self)

    def _encode(self, text: TextFieldTensors, mask: torch.BoolTensor) -> torch.Tensor:
        """Embed, drop, run the phrase layer, drop its output. ELMo at the output of the phrase
        layer was dropped with the embedded text it rode in, so it is not dropped again."""
        encoded = self._phrase_layer(self._dropout(self._text_field_embedder(text)), mask)
        own = encoded.shape[-1] - self._elmo_output_dim
        return torch.cat([self._dropout(encoded[..., :own]), encoded[..., own:]], dim=-1)

    def forward(  # type: ignore
        self,
        question: TextFieldTensors,
        passage: TextFieldTensors,
        span_start: Optional[torch.IntTensor] = None,
        span_end: Optional[torch.IntTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
    ) -> Dict[str, torch.Tensor]:
        """Fields of allennlp-models' SQuAD readers; `metadata` gives the passage text, token
        offsets and gold answer texts for `best_span_str` and EM/F1."""
        question_mask = util.get_text_field_mask(question)
        passage_mask = util.get_text_field_mask(passage)
        encoded_question = self._encode(question, question_mask)
        encoded_passage = self._encode(passage, passage_mask)

        # BiDAF: passage-to-question and question-to-passage attention
        similarity = self._attention(encoded_passage, encoded_question)
        passage_question = util.weighted_sum(
            encoded_question, util.masked_softmax(similarity, question_mask.unsqueeze(1))
        )
        question_passage_similarity = (
            util.replace_masked_values(
                similarity, question_mask.unsqueeze(1), util.min_value_of_dtype(similarity.dtype)
            )
            .max(dim=-1)
            .values
        )
        question_passage = util.weighted_sum(
            encoded_passage, util.masked_softmax(question_passage_similarity, passage_mask)
        )
        merged = torch.cat(
            [
                encoded_passage,
                passage_question,
                encoded_passage * passage_question,
                encoded_passage * question_passage.unsqueeze(1),
            ],
            dim=-1,
        )
        hidden = torch.relu(self._attended(merged))

        # residual self-attention; a word does not attend to itself
        residual = self._dropout(self._residual_encoder(self._dropout(hidden), passage_mask))
        self_similarity = self._self_attention(residual, residual)
        length = passage_mask.size(1)
        others = passage_mask.unsqueeze(1) & ~torch.eye(
            length, dtype=torch.bool, device=passage_mask.device
        )
        self_attended = util.weighted_sum(residual, util.masked_softmax(self_similarity, others))
        hidden = hidden + torch.relu(
            self._self_attended(
                self._dropout(
                    torch.cat([residual, self_attended, residual * self_attended], dim=-1)
                )
            )
        )

        # span prediction
        hidden = self._dropout(hidden)
        start_states = self._span_start_encoder(hidden, passage_mask)
        end_states = self._span_end_encoder(
            self._dropout(torch.cat([hidden, start_states], dim=-1)), passage_mask
        )
        span_start_logits = self._span_start_predictor(self._dropout(start_states)).squeeze(-1)
        span_end_logits = self._span_end_predictor(self._dropout(end_states)).squeeze(-1)
        start_log_probs = util.masked_log_softmax(span_start_logits, passage_mask)
        end_log_probs = util.masked_log_softmax(span_end_logits, passage_mask)
        spans = best_span(start_log_probs, end_log_probs, passage_mask, self._max_span_length)
        output: Dict[str, Any] = {
            "span_start_logits": span_start_logits,
            "span_end_logits": span_end_logits,
            "span_start_probs": start_log_probs.exp(),
            "span_end_probs": end_log_probs.exp(),
            "best_span": spans,
        }
        if span_start is not None and span_end is not None:
            output["loss"] = torch.nn.functional.nll_loss(
                start_log_probs, span_start.squeeze(-1)
            ) + torch.nn.functional.nll_loss(end_log_probs, span_end.squeeze(-1))
            self._span_start_accuracy(start_log_probs, span_start.squeeze(-1))
            self._span_end_accuracy(end_log_probs, span_end.squeeze(-1))
            self._span_accuracy(spans, torch.cat([span_start, span_end], dim=-1))
        if metadata is not None:
            output["best_span_str"] = []
            for record, (start, end) in zip(metadata, spans.tolist()):
                offsets = record["token_offsets"]
                answer = record["original_passage"][offsets[start][0] : offsets[end][1]]
                output["best_span_str"].append(answer)
                if record.get("answer_texts"):
                    self._squad_metrics(answer, record["answer_texts"])
        return output

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        exact_match, f1 = self._squad_metrics.get_metric(reset)
        return {
            "start_acc": self._span_start_accuracy.get_metric(reset),
            "end_acc": self._span_end_accuracy.get_metric(reset),
            "span_acc": self._span_accuracy.get_metric(reset),
            "em": exact_match,
            "f1": f1,
        }
