"""`allennlp predict` works offline for the SQuAD, SRL and coreference models."""

import json

import pytest
from allennlp.commands.train import train_model_from_file
from allennlp.common.testing import AllenNlpTestCase
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from tests.conftest import DATA
from tests.elmo_plugin.commands.test_elmo_embed import allennlp
from tests.elmo_plugin.modules.test_elmo_placement import write_config


class TestOfflinePredictors(AllenNlpTestCase):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp = tmp_path

    def _predictor(self, task, name=None):
        train_model_from_file(str(write_config(self.tmp, "input", task=task)), str(self.tmp / task))
        archive = str(self.tmp / task / "model.tar.gz")
        return Predictor.from_archive(load_archive(archive), name), archive

    def test_srl_with_given_predicates(self):
        predictor, _ = self._predictor("srl", "elmo_plugin_srl")
        tokens = ["The", "cat", "sat", "on", "the", "mat", "and", "purred", "."]
        result = predictor.predict_json({"tokens": tokens, "verb_indices": [2, 7]})
        assert result["words"] == tokens and [v["verb"] for v in result["verbs"]] == [
            "sat",
            "purred",
        ]
        for frame in result["verbs"]:
            assert len(frame["tags"]) == len(tokens)
            # constrained Viterbi: no I-X without a B-X / I-X before it
            for previous, tag in zip(["O"] + frame["tags"], frame["tags"]):
                assert not tag.startswith("I-") or previous[2:] == tag[2:]
        assert predictor.predict_json({"tokens": tokens, "verb_indices": []})["verbs"] == []
        with pytest.raises(ValueError, match="verb index 9"):
            predictor.predict_json({"tokens": tokens, "verb_indices": [9]})

    def test_coref_from_raw_text_is_the_default_predictor(self):
        predictor, _ = self._predictor("coref")
        assert type(predictor).__name__ == "OfflineCorefPredictor"
        result = predictor.predict_json(
            {
                "document": "Mali's government said it was forced. The woman denied it.",
                "genre": "nw",
            }
        )
        assert result["document"][:3] == ["Mali", "'s", "government"]
        for cluster in result["clusters"]:
            for start, end in cluster:
                assert 0 <= start <= end < len(result["document"])
        tokenised = predictor.predict_json(
            {"sentences": [["She", "left", "."], ["She", "came", "back", "."]]}
        )
        assert tokenised["document"] == ["She", "left", ".", "She", "came", "back", "."]

    def test_squad_reading_comprehension(self):
        predictor, _ = self._predictor("squad")
        passage = "The Eiffel Tower was finished in 1889 in Paris."
        result = predictor.predict_json(
            {"question": "When was the tower finished?", "passage": passage}
        )
        assert result["best_span_str"] and result["best_span_str"] in passage

    @pytest.mark.slow
    def test_cli_predict_with_the_dataset_reader(self, repo_root):
        _, archive = self._predictor("coref")
        output = self.tmp / "predictions.jsonl"
        result = allennlp(
            "predict",
            archive,
            DATA / "format_samples" / "coref.gold_conll",
            "--use-dataset-reader",
            "--output-file",
            output,
            "--silent",
            "--include-package",
            "elmo_plugin",
            cwd=repo_root,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        predictions = [json.loads(line) for line in output.read_text().splitlines()]
        assert len(predictions) == 4 and all("clusters" in p for p in predictions)
