"""SRL predictions offline: the predicates are given, as there is no POS tagger to find them."""

from typing import List

from allennlp.common.util import JsonDict, sanitize
from allennlp.data import Instance, Token
from allennlp.predictors import Predictor
from allennlp_models.structured_prediction.predictors.srl import SemanticRoleLabelerPredictor


@Predictor.register("elmo_plugin_srl")
class OfflineSrlPredictor(Predictor):
    """Semantic role labelling with allennlp-models' "srl" model, without spaCy's trained English
    pipeline (which "semantic_role_labeling" loads to find verbs, and cannot download here).
    Input: `{"tokens": [...], "verb_indices": [...]}`; output as "semantic_role_labeling":
    `{"words": [...], "verbs": [{"verb", "description", "tags"}, ...]}`, one frame per given
    predicate (BIO tags from constrained Viterbi decoding). `--use-dataset-reader` predicts every
    predicate of a `*gold_conll` file.

    Registered as a `Predictor` with name "elmo_plugin_srl".
    """

    def _json_to_instances(self, json_dict: JsonDict) -> List[Instance]:
        tokens = [Token(word) for word in json_dict["tokens"]]
        for index in json_dict["verb_indices"]:
            if not 0 <= index < len(tokens):
                raise ValueError(f"verb index {index} outside the {len(tokens)} tokens")
        return [
            self._dataset_reader.text_to_instance(
                tokens, [int(i == index) for i in range(len(tokens))]
            )
            for index in json_dict["verb_indices"]
        ]

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        raise NotImplementedError("one instance per predicate: use predict_json")

    def predict_json(self, inputs: JsonDict) -> JsonDict:
        instances = self._json_to_instances(inputs)
        outputs = self._model.forward_on_instances(instances) if instances else []
        verbs = [
            {
                "verb": output["verb"],
                "description": SemanticRoleLabelerPredictor.make_srl_string(
                    output["words"], output["tags"]
                ),
                "tags": output["tags"],
            }
            for output in outputs
        ]
        return sanitize({"words": inputs["tokens"], "verbs": verbs})

    def predict_batch_json(self, inputs: List[JsonDict]) -> List[JsonDict]:
        return [self.predict_json(json_dict) for json_dict in inputs]
