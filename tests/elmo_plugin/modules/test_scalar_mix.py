import pytest
import torch
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.nn.regularizers import L2Regularizer, RegularizerApplicator

from elmo_plugin.modules.regularization import scalar_mix_penalty
from elmo_plugin.modules.scalar_mix import ElmoScalarMix

pytestmark = pytest.mark.numerics  # compared across rounding paths: make test reruns it on AVX2


def test_mix_is_gamma_times_softmax_weighted_sum():
    mix = ElmoScalarMix(3, initial_scalar_parameters=[0.0, 1.0, 2.0])
    with torch.no_grad():
        mix.gamma.fill_(2.0)
    layers = [torch.full((1, 2, 4), float(k)) for k in range(3)]
    weights = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    expected = 2.0 * sum(w * layer for w, layer in zip(weights, layers))
    torch.testing.assert_close(mix(layers), expected)
    torch.testing.assert_close(mix.normalized_weights(), weights)


def test_penalty_is_lambda_times_squared_norm_of_raw_weights():
    mix = ElmoScalarMix(3, l2_coefficient=0.1, initial_scalar_parameters=[1.0, -2.0, 3.0])
    assert mix.regularization_penalty().item() == pytest.approx(0.1 * 14.0)
    fixed = ElmoScalarMix(
        3, l2_coefficient=0.1, initial_scalar_parameters=[1.0, -2.0, 3.0], trainable=False
    )
    assert fixed.regularization_penalty().item() == 0.0 and not fixed.penalized
    for bad in (-1.0, float("nan"), float("inf")):  # NaN passed `< 0` before the core's check
        with pytest.raises(ValueError, match="l2_coefficient .lambda. must be a finite number"):
            ElmoScalarMix(3, l2_coefficient=bad)


class _TwoMixes(Model):
    def __init__(self, regularizer=None):
        super().__init__(Vocabulary(), regularizer=regularizer)
        self.a = ElmoScalarMix(3, l2_coefficient=0.5, initial_scalar_parameters=[1.0, 2.0, 0.0])
        self.b = ElmoScalarMix(3, l2_coefficient=0.0, initial_scalar_parameters=[5.0, 5.0, 5.0])
        self.other = torch.nn.Linear(2, 2)


def test_every_model_penalty_includes_the_mixes():
    model = _TwoMixes()
    assert scalar_mix_penalty(model).item() == pytest.approx(0.5 * 5.0)
    assert model.get_regularization_penalty().item() == pytest.approx(2.5)
    # added on top of an AllenNLP regularizer the config already has
    regularizer = RegularizerApplicator([("other.weight", L2Regularizer(1.0))])
    model = _TwoMixes(regularizer)
    expected = 2.5 + (model.other.weight**2).sum().item()
    assert model.get_regularization_penalty().item() == pytest.approx(expected)
    # and it has a gradient: 2 * lambda * w
    model.get_regularization_penalty().backward()
    assert model.a.scalar_parameters[1].grad.item() == pytest.approx(2 * 0.5 * 2.0)


def test_a_regularizer_that_already_reaches_the_mix_counts_it_once(caplog):
    regularizer = RegularizerApplicator(
        [("scalar_parameters", L2Regularizer(0.5)), ("other.weight", L2Regularizer(1.0))]
    )
    model = _TwoMixes(regularizer)
    expected = (
        0.5 * (5.0 + 75.0) + (model.other.weight**2).sum().item()
    )  # both mixes by the regex, not again by lambda
    with caplog.at_level("WARNING"):
        assert model.get_regularization_penalty().item() == pytest.approx(expected)
    assert "already reaches a.scalar_parameters.0" in caplog.text
