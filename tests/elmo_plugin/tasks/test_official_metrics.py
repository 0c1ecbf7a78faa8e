"""The task metrics agree with the official scripts' definitions on hand-made cases."""

import pytest
import torch
from allennlp_models.structured_prediction.metrics.srl_eval_scorer import SrlEvalScorer
from allennlp_models.structured_prediction.models.srl import convert_bio_tags_to_conll_format


def test_srl_span_f1_is_the_official_conll_script_excluding_the_verb():
    # the allennlp-models "srl" model's metric runs CoNLL-2005's srl-eval.pl (the V span excluded)
    words = ["The", "cat", "sat", "on", "the", "mat"]
    gold = ["B-ARG0", "I-ARG0", "B-V", "B-ARGM-LOC", "I-ARGM-LOC", "I-ARGM-LOC"]
    predicted = [
        [
            "B-ARG0",
            "I-ARG0",
            "B-V",
            "B-ARGM-LOC",
            "I-ARGM-LOC",
            "O",
        ],  # ARG0 right, LOC boundary wrong
        [
            "B-ARG0",
            "I-ARG0",
            "O",
            "B-ARGM-LOC",
            "I-ARGM-LOC",
            "I-ARGM-LOC",
        ],  # V missed: not counted
    ]
    scorer = SrlEvalScorer(ignore_classes=["V"])
    scorer(
        [2],
        [words],
        [convert_bio_tags_to_conll_format(predicted[0])],
        [convert_bio_tags_to_conll_format(gold)],
    )
    metrics = scorer.get_metric(reset=True)
    # 1 of 2 predicted argument spans matches 1 of 2 gold spans exactly
    assert metrics["precision-overall"] == pytest.approx(0.5)
    assert metrics["recall-overall"] == pytest.approx(0.5)
    assert metrics["f1-measure-overall"] == pytest.approx(0.5)
    scorer(
        [2],
        [words],
        [convert_bio_tags_to_conll_format(predicted[1])],
        [convert_bio_tags_to_conll_format(gold)],
    )
    assert scorer.get_metric(reset=True)["f1-measure-overall"] == pytest.approx(1.0)


def test_coref_muc_b_cubed_and_ceaf_phi4_match_their_definitions():
    # key {a, b, c}; response {a, b}, {c, d} (d is not a key mention). By hand, from the definitions
    # of the CoNLL-2012 reference scorer:
    #   MUC  R = (3 - 2) / (3 - 1) = 1/2;  P = ((2 - 1) + (2 - 2)) / ((2 - 1) + (2 - 1)) = 1/2
    #   B3   R = (2/3 + 2/3 + 1/3) / 3 = 5/9;  P = (1 + 1 + 1/2 + 0) / 4 = 5/8
    #   CEAF-phi4: phi4(K, R1) = 2*2/5 = 0.8 is the best alignment: R = 0.8 / 1, P = 0.8 / 2
    from allennlp_models.coref.metrics.conll_coref_scores import ConllCorefScores

    a, b, c, d = (0, 0), (1, 1), (2, 2), (3, 3)
    metric = ConllCorefScores()
    top_spans = torch.tensor([[a, b, c, d]])
    antecedent_indices = torch.tensor(
        [[[0, 0], [0, 0], [1, 0], [2, 1]]]
    )  # previous spans, nearest first
    predicted_antecedents = torch.tensor([[-1, 0, -1, 0]])  # b -> a, d -> c
    metric(top_spans, antecedent_indices, predicted_antecedents, [{"clusters": [[a, b, c]]}])
    expected = {"muc": (0.5, 0.5), "b_cubed": (5 / 8, 5 / 9), "ceafe": (0.4, 0.8)}
    for scorer in metric.scorers:
        precision, recall = expected[scorer.metric.__name__]
        assert scorer.get_precision() == pytest.approx(precision)
        assert scorer.get_recall() == pytest.approx(recall)
    f1 = [2 * p * r / (p + r) for p, r in expected.values()]
    assert metric.get_metric()[2] == pytest.approx(sum(f1) / 3)  # the CoNLL average F1


def test_squad_em_and_f1_follow_the_official_v1_1_script():
    # official: lower-case, strip punctuation and articles (a/an/the), token-overlap F1, max over
    # the gold answers, averaged over questions
    from allennlp_models.rc.metrics import SquadEmAndF1

    metric = SquadEmAndF1()
    metric("The Eiffel Tower!", ["Eiffel tower"])  # EM 1, F1 1
    metric(
        "Paris France", ["Paris", "in France"]
    )  # EM 0; F1 max(2/3 vs "paris", 1/2 vs "in france")
    metric("no overlap", ["something else"])  # 0, 0
    exact_match, f1 = metric.get_metric()
    assert exact_match == pytest.approx(1 / 3)
    assert f1 == pytest.approx((1 + 2 / 3 + 0) / 3)
