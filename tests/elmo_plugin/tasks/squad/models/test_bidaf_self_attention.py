"""BiDAF + self-attention (Clark and Gardner 2017): span decoding and predictions."""

import math

import pytest
import torch
from allennlp.common.testing import ModelTestCase
from allennlp_models.rc.tools import squad

from elmo_plugin.tasks.squad.models.bidaf_self_attention import best_span
from tests.conftest import DATA
from tests.elmo_plugin.modules.test_elmo_placement import write_config


def test_best_span_is_the_best_valid_span_of_at_most_max_length():
    start = torch.log_softmax(torch.tensor([[0.0, 5.0, 0.0, 0.0, 0.0, 9.0]]), -1)
    end = torch.log_softmax(torch.tensor([[7.0, 0.0, 0.0, 4.0, 6.0, 9.0]]), -1)
    mask = torch.tensor([[True, True, True, True, True, False]])
    # scores start + end: (1, 4) 11 > (1, 3) 9 > (0, 0) 7 > (4, 4) 6; position 5 is padding, (5, 5)
    # would score 18; an end before its start, e.g. (1, 0) = 12, is not a span
    assert best_span(start, end, mask, max_length=17).tolist() == [[1, 4]]
    assert best_span(start, end, mask, max_length=3).tolist() == [[1, 3]]
    assert best_span(start, end, mask, max_length=1).tolist() == [[0, 0]]


class TestBidafSelfAttention(ModelTestCase):
    @pytest.fixture(autouse=True)
    def _model(self, tmp_path):
        self.set_up_model(
            write_config(tmp_path, "both", task="squad"), DATA / "format_samples" / "squad.json"
        )

    def test_predicts_passage_substrings_and_official_scores(self):
        self.model.eval()
        output = self.model(**self.dataset.as_tensor_dict())
        spans = output["best_span"].tolist()
        for (start, end), answer, instance in zip(spans, output["best_span_str"], self.instances):
            offsets = instance["metadata"]["token_offsets"]
            assert 0 <= end - start < 17
            assert (
                answer
                == instance["metadata"]["original_passage"][offsets[start][0] : offsets[end][1]]
            )
        metrics = self.model.get_metrics(reset=True)
        assert set(metrics) == {"start_acc", "end_acc", "span_acc", "em", "f1"}
        # the official v1.1 scores of these very predictions, max over the gold answers
        golds = [instance["metadata"]["answer_texts"] for instance in self.instances]
        scores = [squad.get_metric_score(p, g) for p, g in zip(output["best_span_str"], golds)]
        assert metrics["em"] == pytest.approx(sum(em for em, _ in scores) / len(scores))
        assert metrics["f1"] == pytest.approx(sum(f1 for _, f1 in scores) / len(scores))
        assert (
            self.model._phrase_layer.get_output_dim() == 180 + 32
        )  # ELMo_out joins the GRU states


class TestBidafSelfAttentionLearns(ModelTestCase):
    @pytest.mark.slow
    @pytest.mark.numerics
    def test_fits_the_format_sample(self, tmp_path):
        """Train until the eval loss guarantees every gold span is the decoded one, then check the
        decoder and the official scores agree. Below `log(2) / n` (mean over `n` questions of
        `-log p(start) - log p(end)`), every question has `p(start), p(end) > 1/2`, so its gold
        span is the unique best span whatever the rounding: the criterion does not depend on
        how many steps one CPU's arithmetic needs to get there (the cap is 5x what it takes here)."""
        torch.manual_seed(0)
        self.set_up_model(
            write_config(tmp_path, None, task="squad"), DATA / "format_samples" / "squad.json"
        )
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        batch = self.dataset.as_tensor_dict()
        fitted = math.log(2) / len(self.instances)

        def eval_loss() -> float:
            self.model.eval()
            with torch.no_grad():
                loss = self.model(**batch)["loss"].item()
            self.model.train()
            return loss

        first = eval_loss()
        assert first > fitted  # an untrained model does not already fit
        for _ in range(90):
            optimizer.zero_grad()
            self.model(**batch)["loss"].backward()
            optimizer.step()
            if eval_loss() < fitted:
                break
        self.model.eval()
        self.model.get_metrics(reset=True)
        output = self.model(**batch)
        assert output["loss"].item() < fitted, (first, output["loss"].item())
        metrics = self.model.get_metrics(reset=True)
        assert metrics["span_acc"] == 1.0 and metrics["em"] == 1.0 and metrics["f1"] == 1.0
