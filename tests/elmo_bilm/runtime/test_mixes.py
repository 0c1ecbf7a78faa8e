"""`ElmoMixes`, the one owner of Eq. (1) (`Elmo` and the plugin's `ElmoRepresentations` build on
it): one biLM pass, one mix and dropout each, the layer choice as `Layers`."""

import pytest
import torch

from elmo_bilm import batch_to_ids, load_bilm_tf
from elmo_bilm.model.scalar_mix import ScalarMix
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.runtime.mixes import ElmoMixes
from elmo_bilm.utils.errors import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

SENTENCES = [["The", "cat", "sat", "."], ["Dogs", "bark"]]


@pytest.fixture(scope="module")
def bilm():
    return load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)


def test_one_pass_n_mixes_with_their_own_dropout(bilm):
    mixes = ElmoMixes(bilm, [0.0, 0.5])
    assert len(mixes.scalar_mixes) == 2 and [d.p for d in mixes.dropouts] == [0.0, 0.5]
    assert not any(p.requires_grad for p in mixes.bilm.parameters())  # frozen by default
    assert all(p.requires_grad for p in mixes.scalar_mixes[0].parameters())
    output = mixes.eval()(batch_to_ids(SENTENCES))
    layers = bilm(batch_to_ids(SENTENCES))["activations"]
    expected = sum(layer / 3 for layer in layers)
    for mixed in output["elmo_representations"]:
        assert torch.allclose(mixed, expected, atol=1e-6)


def test_top_reads_the_top_layer_alone(bilm):
    mixes = ElmoMixes(bilm, [0.0], layers="top", do_layer_norm=False).eval()
    mix = mixes.scalar_mixes[0]
    assert mix.weights().tolist() == [0.0, 0.0, 1.0]
    assert not any(p.requires_grad for p in mix.scalar_parameters) and mix.gamma.requires_grad
    with torch.no_grad():
        mix.gamma.fill_(2.5)
        layers = bilm(batch_to_ids(SENTENCES))["activations"]
        # a NaN in a lower layer stays there: the top is read alone, not weighted by zeros
        layers[0][:] = float("nan")
        assert torch.equal(mix(layers), 2.5 * layers[-1])


def test_fixed_weights_and_an_index(bilm):
    fixed = ElmoMixes(bilm, [0.0], layers=[1.0, 0.0, 0.0]).scalar_mixes[0]
    assert not any(p.requires_grad for p in fixed.parameters())
    assert [float(p) for p in fixed.scalar_parameters] == [1.0, 0.0, 0.0]
    assert ElmoMixes(bilm, [0.0], layers=Layers(index=1)).scalar_mixes[0].weights().tolist() == [
        0.0,
        1.0,
        0.0,
    ]


@pytest.mark.parametrize(
    "layers,message",
    [("average", "an ELMo mix takes"), ([1.0, 2.0], "2 layer weights"), (5, "layer 5")],
)
def test_choices_a_mix_cannot_take(bilm, layers, message):
    with pytest.raises(UsageError, match=message):
        ElmoMixes(bilm, [0.0], layers=layers)


def test_scalar_mix_layer_out_of_range():
    with pytest.raises(UsageError, match="layer 3 of a mix of 3"):
        ScalarMix(3, layer=3)
