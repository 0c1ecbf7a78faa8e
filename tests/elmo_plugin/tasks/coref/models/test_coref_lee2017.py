"""Lee et al. (2017) coreference: allennlp-models' span ranking, plus speaker and genre features."""

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch
from allennlp.models import Model

from tests.conftest import DATA
from tests.elmo_plugin.modules.test_elmo_placement import write_config


class TestLee2017Coreference(ModelTestCase):
    @pytest.fixture(autouse=True)
    def _model(self, tmp_path):
        self.set_up_model(
            write_config(tmp_path, None, task="coref"), DATA / "format_samples" / "coref.gold_conll"
        )
        self.model.eval()

    def _loss(self, **changes):
        batch = self.dataset.as_tensor_dict()
        batch.update(changes)
        with torch.no_grad():
            return self.model(**batch)["loss"].item()

    def test_antecedent_scores_see_speakers_and_genre(self):
        batch = self.dataset.as_tensor_dict()
        base = self._loss()
        assert self._loss() == base  # deterministic in eval mode
        alternating = (
            torch.arange(batch["speaker_ids"].shape[1]).remainder(2).expand_as(batch["speaker_ids"])
        )
        assert self._loss(speaker_ids=alternating) != pytest.approx(base, abs=1e-6)
        assert self._loss(genre=torch.full_like(batch["genre"], 5)) != pytest.approx(base, abs=1e-6)
        assert (
            self.model._antecedent_feedforward._module.get_input_dim()
            == 3 * self.model._mention_feedforward._module.get_input_dim() + 3 * 20
        )

    def test_higher_order_inference_is_refused(self):
        params = Params.from_file(self.param_file).get("model").as_dict()
        params["inference_order"] = 2
        with pytest.raises(ConfigurationError, match="first-order"):
            Model.from_params(vocab=self.vocab, params=Params(params))


class TestLee2017CoreferenceIsAllennlpCorefPlusFeatures(ModelTestCase):
    def test_equals_allennlp_models_coref_when_the_feature_weights_are_zero(self, tmp_path):
        torch.manual_seed(0)
        self.set_up_model(
            write_config(tmp_path, None, task="coref"), DATA / "format_samples" / "coref.gold_conll"
        )
        params = Params.from_file(self.param_file).get("model").as_dict()
        params["type"] = "coref"
        params["antecedent_feedforward"]["input_dim"] -= 2 * 20  # no speaker / genre features
        reference = Model.from_params(vocab=self.vocab, params=Params(params))
        ours = self.model
        first_layer = ours._antecedent_feedforward._module._linear_layers[0]
        with torch.no_grad():
            first_layer.weight[:, -40:] = 0.0
        state = {
            k: v
            for k, v in ours.state_dict().items()
            if not k.startswith(("_genre", "_same_speaker"))
        }
        state["_antecedent_feedforward._module._linear_layers.0.weight"] = first_layer.weight[
            :, :-40
        ]
        reference.load_state_dict(state)
        ours.eval()
        reference.eval()
        for instance in self.instances:  # one document per batch, as configured
            batch = Batch([instance])
            batch.index_instances(self.vocab)
            tensors = batch.as_tensor_dict()
            with torch.no_grad():
                mine = ours(**tensors)
                tensors.pop("genre")
                tensors.pop("speaker_ids")
                theirs = reference(**tensors)
            assert mine["loss"].item() == pytest.approx(theirs["loss"].item(), rel=1e-5, abs=1e-5)
            for key in ("top_spans", "antecedent_indices", "predicted_antecedents"):
                assert torch.equal(mine[key], theirs[key]), key
        assert ours.get_metrics(reset=True) == reference.get_metrics(reset=True)
