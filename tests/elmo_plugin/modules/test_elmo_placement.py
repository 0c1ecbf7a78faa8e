"""ELMo at the input, output or both of the task encoder, for every task model: train a few steps,
save, reload, predict."""

import pytest
import torch
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch

from tests.conftest import DATA as SHARED
from tests.conftest import REPO_ROOT
from tests.numerics import NETWORK, assert_float32_close

pytestmark = pytest.mark.slow  # trains models or starts subprocesses

TASKS = {
    "ner": (
        REPO_ROOT / "training_config" / "conll2003_crf_tagger.libsonnet",
        REPO_ROOT / "fixtures" / "conll2003" / "tiny.txt",
    ),
    "snli": (
        REPO_ROOT / "training_config" / "snli_esim.libsonnet",
        SHARED / "format_samples" / "snli.jsonl",
    ),
    "sst": (
        REPO_ROOT / "training_config" / "sst_bcn.libsonnet",
        REPO_ROOT / "fixtures" / "sst" / "tiny.txt",
    ),
    "coref": (
        REPO_ROOT / "training_config" / "coref_lee2017.libsonnet",
        SHARED / "format_samples" / "coref.gold_conll",
    ),
    "squad": (
        REPO_ROOT / "training_config" / "squad_bidaf_selfattn.libsonnet",
        SHARED / "format_samples" / "squad.json",
    ),
    "srl": (
        REPO_ROOT / "training_config" / "srl_he2017.libsonnet",
        SHARED / "format_samples" / "srl_example.gold_conll",
    ),
}
# small encoders for the tasks whose paper encoder is slow on CPU
TEST_SIZES = {"srl": "hidden_size=8, num_layers=2"}
LIBSONNET, DATA = TASKS["ner"]
# Biases of scores that only ever enter a softmax: a constant shift changes nothing, so their
# gradient is rounding noise, exactly zero in some batches.
SOFTMAX_INVARIANT = {
    "sst": {"_self_attentive_pooling_projection.bias"},
    "coref": {"_attentive_span_extractor._global_attention._module.bias"},  # softmax over a span
}


def write_config(tmp_path, placement, layer_norm=False, task="ner"):
    libsonnet, data = TASKS[task]
    # ELMo's layer norm (bilm-tf, AllenNLP ScalarMix) takes its statistics over the whole batch,
    # so batch-consistency checks run without it.
    elmo = (
        "null"
        if placement is None
        else (
            f'{{placement: "{placement}", l2_coefficient: 0.1, do_layer_norm: {str(layer_norm).lower()}, dropout: 0.5}}'
        )
    )
    path = tmp_path / f"{task}_{placement}_{layer_norm}.jsonnet"
    path.write_text(
        f'local task = import "{libsonnet}";\n'
        f"task(elmo={elmo}{', ' + TEST_SIZES[task] if task in TEST_SIZES else ''}) + "
        f'{{train_data_path: "{data}", validation_data_path: "{data}", '
        f"test_data_path: null, evaluate_on_test: false, data_loader: {{batch_size: 2}}, "
        f"trainer+: {{num_epochs: 2}}}}\n"
    )
    return path


class TestPlacements(ModelTestCase):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp = tmp_path

    def ensure_batch_predictions_are_consistent(self, keys_to_ignore=()):
        """AllenNLP's check (each instance alone equals its row of the batch), with a float32
        tolerance instead of its fixed `atol=1e-6`: another batch size runs the products in
        another order (row-count dependent kernels, measured in docs/reliability.md), which moves
        a logit of magnitude 5 after a whole network by a few of its units (2e-6 seen on an AVX2
        machine)."""
        self.model.eval()
        batch = Batch(self.instances)
        together = self.model(**batch.as_tensor_dict(batch.get_padding_lengths()))
        for i, instance in enumerate(self.instances):
            alone = Batch([instance])
            single = self.model(**alone.as_tensor_dict(alone.get_padding_lengths()))
            for key, value in single.items():
                if "loss" in key or key in keys_to_ignore:
                    continue
                row = together[key][i]
                if isinstance(value, torch.Tensor):
                    row = row[tuple(slice(0, size) for size in value[0].shape)]
                    if value.is_floating_point():
                        assert_float32_close(row, value[0], NETWORK, msg=key)
                    else:  # masks, indices
                        assert torch.equal(row, value[0]), key
                else:
                    assert row == value[0], key

    @pytest.mark.parametrize("task", sorted(TASKS))
    @pytest.mark.parametrize("placement", [None, "input", "output", "both"])
    def test_train_save_reload_predict(self, placement, task):
        config = write_config(self.tmp, placement, task=task)
        self.set_up_model(config, TASKS[task][1])
        self.ensure_model_can_train_save_and_load(
            config, tolerance=1e-4, gradients_to_ignore=SOFTMAX_INVARIANT.get(task)
        )
        if (
            task != "coref"
        ):  # coref keeps spans_per_word x the *padded* length: batches of 1 (as configured)
            self.ensure_batch_predictions_are_consistent()

    def test_output_placement_widens_the_encoder_output_and_mixes_are_independent(self):
        widths = {}
        for placement in ("input", "output", "both"):
            self.set_up_model(write_config(self.tmp, placement, layer_norm=True), DATA)
            widths[placement] = (
                self.model.encoder.get_input_dim(),
                self.model.encoder.get_output_dim(),
            )
            if placement == "both":
                model = self.model
        elmo_dim = 32  # the fixture biLM: 2 x projection 16
        assert widths["input"] == (50 + 128 + elmo_dim, 200)
        assert widths["output"] == (
            50 + 128 + elmo_dim,
            200 + elmo_dim,
        )  # ELMo_out bypasses the LSTM
        assert widths["both"] == (50 + 128 + 2 * elmo_dim, 200 + elmo_dim)
        assert model.tag_projection_layer._module.in_features == 200 + elmo_dim
        mix_in, mix_out = model.text_field_embedder.elmo.scalar_mixes
        assert mix_in.gamma is not mix_out.gamma
        # one optimisation step moves the two mixes differently; the biLM gets no gradient
        before = {
            name: p.detach().clone()
            for name, p in model.text_field_embedder.elmo.bilm.named_parameters()
        }
        model.train()
        optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
        batch = self.dataset.as_tensor_dict()
        model(**batch)["loss"].backward()
        optimizer.step()
        assert not torch.allclose(mix_in.raw_weights(), mix_out.raw_weights())
        for name, parameter in model.text_field_embedder.elmo.bilm.named_parameters():
            assert parameter.grad is None and torch.equal(parameter, before[name]), name
        assert (
            sum(1 for m in model.modules() if m.__class__.__name__ == "BiLm") == 1
        )  # one shared biLM

    def test_esim_embeds_premise_and_hypothesis_with_one_biLM_and_shared_mixes(self):
        self.set_up_model(
            write_config(self.tmp, "both", layer_norm=True, task="snli"), TASKS["snli"][1]
        )
        model = self.model
        assert sum(1 for m in model.modules() if m.__class__.__name__ == "BiLm") == 1
        assert model._encoder.get_output_dim() == 600 + 32
        calls = []
        model._text_field_embedder.elmo.bilm.register_forward_hook(lambda *args: calls.append(1))
        model._text_field_embedder.elmo.cache = None  # count real biLM passes
        model.eval()
        model(**self.dataset.as_tensor_dict())
        assert len(calls) == 2  # premise, hypothesis
