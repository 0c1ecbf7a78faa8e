"""The task metrics agree with the official scripts' definitions on hand-made cases."""
import pytest
from allennlp_models.structured_prediction.metrics.srl_eval_scorer import SrlEvalScorer
from allennlp_models.structured_prediction.models.srl import convert_bio_tags_to_conll_format


def test_srl_span_f1_is_the_official_conll_script_excluding_the_verb():
    # the allennlp-models "srl" model's metric runs CoNLL-2005's srl-eval.pl (the V span excluded)
    words = ["The", "cat", "sat", "on", "the", "mat"]
    gold = ["B-ARG0", "I-ARG0", "B-V", "B-ARGM-LOC", "I-ARGM-LOC", "I-ARGM-LOC"]
    predicted = [
        ["B-ARG0", "I-ARG0", "B-V", "B-ARGM-LOC", "I-ARGM-LOC", "O"],  # ARG0 right, LOC boundary wrong
        ["B-ARG0", "I-ARG0", "O", "B-ARGM-LOC", "I-ARGM-LOC", "I-ARGM-LOC"],  # V missed: not counted
    ]
    scorer = SrlEvalScorer(ignore_classes=["V"])
    scorer([2], [words], [convert_bio_tags_to_conll_format(predicted[0])], [convert_bio_tags_to_conll_format(gold)])
    metrics = scorer.get_metric(reset=True)
    # 1 of 2 predicted argument spans matches 1 of 2 gold spans exactly
    assert metrics["precision-overall"] == pytest.approx(0.5)
    assert metrics["recall-overall"] == pytest.approx(0.5)
    assert metrics["f1-measure-overall"] == pytest.approx(0.5)
    scorer([2], [words], [convert_bio_tags_to_conll_format(predicted[1])], [convert_bio_tags_to_conll_format(gold)])
    assert scorer.get_metric(reset=True)["f1-measure-overall"] == pytest.approx(1.0)
