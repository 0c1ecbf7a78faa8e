"""Lee et al. (2017) end-to-end coreference, with the speaker and genre features allennlp-models lacks."""

import math
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.models import Model
from allennlp.modules.token_embedders import Embedding
from allennlp.nn import util
from allennlp_models.coref.models.coref import CoreferenceResolver

from elmo_plugin.tasks.coref.genres import GENRES


@Model.register("elmo_plugin_coref")
class Lee2017Coreference(CoreferenceResolver):
    """The span-ranking model of Lee et al. (2017), the paper's coreference baseline (Supplement
    A.6): allennlp-models' "coref" (span representations from biLSTM endpoints + head attention +
    width feature, mention pruning, antecedent scoring with a distance feature, marginal
    log-likelihood over gold antecedents, MUC / B-cubed / CEAF-phi4 scores) plus the two pairwise
    features of the paper that "coref" drops: a same-speaker embedding and a document-genre
    embedding, each `feature_size` wide, so `antecedent_feedforward` takes
    `3 * span_dim + 3 * feature_size` inputs. Needs the `elmo_plugin_coref` reader's `genre` and
    `speaker_ids`. First-order inference only (`inference_order` 1), as in Lee et al. (2017).

    Registered as a `Model` with name "elmo_plugin_coref". Predictor: "elmo_plugin_coref"
    (offline).

    # Parameters

    feature_size : `int`
        Width of the span-width, distance, same-speaker and genre embeddings (20 in Lee et al.).
    inference_order : `int`, optional (default = `1`)
        Must be 1: higher-order inference (Lee et al. 2018) came after the paper.
    **kwargs
        allennlp-models' "coref" parameters (`text_field_embedder`, `context_layer`,
        `mention_feedforward`, `antecedent_feedforward`, `max_span_width`, `spans_per_word`,
        `max_antecedents`, `coarse_to_fine`, `lexical_dropout`, `initializer`).
    """

    default_predictor = "elmo_plugin_coref"

    def __init__(self, feature_size: int, inference_order: int = 1, **kwargs) -> None:
        if inference_order != 1:
            raise ConfigurationError(
                "elmo_plugin_coref is first-order (Lee et al. 2017): inference_order must be 1"
            )
        super().__init__(feature_size=feature_size, inference_order=1, **kwargs)
        self._genre_embedding = Embedding(
            num_embeddings=len(GENRES) + 1, embedding_dim=feature_size
        )
        self._same_speaker_embedding = Embedding(num_embeddings=2, embedding_dim=feature_size)

    def forward(  # type: ignore
        self,
        text: TextFieldTensors,
        spans: torch.Tensor,
        genre: torch.LongTensor,
        speaker_ids: torch.LongTensor,
        span_labels: Optional[torch.IntTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
    ) -> Dict[str, torch.Tensor]:
        """As allennlp-models' "coref", with `genre` `(batch,)` and `speaker_ids`
        `(batch, document_length)` (the same id = the same speaker within a document)."""
        text_embeddings = self._lexical_dropout(self._text_field_embedder(text))
        text_mask = util.get_text_field_mask(text)
        document_length = text_embeddings.size(1)
        num_spans = spans.size(1)
        span_mask = spans[:, :, 0] >= 0
        spans = F.relu(spans.float()).long()  # padding spans -> (0, 0)

        contextualized = self._context_layer(text_embeddings, text_mask)
        span_embeddings = torch.cat(
            [
                self._endpoint_span_extractor(contextualized, spans),
                self._attentive_span_extractor(text_embeddings, spans),
            ],
            -1,
        )
        mention_scores = self._mention_scorer(self._mention_feedforward(span_embeddings)).squeeze(
            -1
        )

        # keep the best spans_per_word * length spans (in document order)
        num_spans_to_keep = min(int(math.floor(self._spans_per_word * document_length)), num_spans)
        top_scores, top_mask, top_indices = util.masked_topk(
            mention_scores, span_mask, num_spans_to_keep
        )
        flat_top_indices = util.flatten_and_batch_shift_indices(top_indices, num_spans)
        top_spans = util.batched_index_select(spans, top_indices, flat_top_indices)
        top_embeddings = util.batched_index_select(span_embeddings, top_indices, flat_top_indices)
        # a span's speaker is its first word's
        top_speakers = torch.gather(speaker_ids, 1, top_spans[:, :, 0])

        max_antecedents = min(self._max_antecedents, num_spans_to_keep)
        if self._coarse_to_fine:
            pruned = self._coarse_to_fine_pruning(
                top_embeddings, top_scores, top_mask, max_antecedents
            )
        else:
            pruned = self._distance_pruning(top_embeddings, top_scores, max_antecedents)
        partial_scores, antecedent_mask, antecedent_offsets, antecedent_indices = pruned
        flat_antecedent_indices = util.flatten_and_batch_shift_indices(
            antecedent_indices, num_spans_to_keep
        )
        antecedent_embeddings = util.batched_index_select(
            top_embeddings, antecedent_indices, flat_antecedent_indices
        )
        antecedent_speakers = util.batched_index_select(
            top_speakers.unsqueeze(-1), antecedent_indices, flat_antecedent_indices
        ).squeeze(-1)
        same_speaker = (top_speakers.unsqueeze(-1) == antecedent_speakers).long()

        # pairwise: [g_i; g_j; g_i * g_j; distance] (allennlp-models) + [same speaker; genre]
        pair_embeddings = self._compute_span_pair_embeddings(
            top_embeddings, antecedent_embeddings, antecedent_offsets
        )
        genre_embeddings = self._genre_embedding(genre)[:, None, None, :].expand(
            *same_speaker.shape, -1
        )
        pair_embeddings = torch.cat(
            [pair_embeddings, self._same_speaker_embedding(same_speaker), genre_embeddings], -1
        )
        antecedent_scores = self._antecedent_scorer(
            self._antecedent_feedforward(pair_embeddings)
        ).squeeze(-1)
        antecedent_scores = util.replace_masked_values(
            antecedent_scores + partial_scores,
            antecedent_mask,
            util.min_value_of_dtype(antecedent_scores.dtype),
        )
        # the dummy antecedent (no link) scores 0
        coreference_scores = torch.cat(
            [antecedent_scores.new_zeros(*antecedent_scores.shape[:2], 1), antecedent_scores], -1
        )
        predicted_antecedents = coreference_scores.argmax(2) - 1

        output = {
            "top_spans": top_spans,
            "antecedent_indices": antecedent_indices,
            "predicted_antecedents": predicted_antecedents,
        }
        if span_labels is not None:
            top_labels = util.batched_index_select(
                span_labels.unsqueeze(-1), top_indices, flat_top_indices
            )
            antecedent_labels = util.batched_index_select(
                top_labels, antecedent_indices, flat_antecedent_indices
            ).squeeze(-1)
            antecedent_labels = util.replace_masked_values(antecedent_labels, antecedent_mask, -100)
            gold = self._compute_antecedent_gold_labels(top_labels, antecedent_labels)
            log_probs = util.masked_log_softmax(coreference_scores, top_mask.unsqueeze(-1))
            # negative marginal log-likelihood of all gold antecedents
            output["loss"] = -util.logsumexp(log_probs + gold.log()).sum()
            self._mention_recall(top_spans, metadata)
            self._conll_coref_scores(top_spans, antecedent_indices, predicted_antecedents, metadata)
        if metadata is not None:
            output["document"] = [x["original_text"] for x in metadata]
        return output
