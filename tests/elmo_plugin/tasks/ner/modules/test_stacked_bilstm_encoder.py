"""The A.7 NER encoder: biLSTM layers of their own widths, variational dropout on every layer's input."""

import pytest
import torch

from elmo_plugin.tasks.ner.modules.stacked_bilstm_encoder import StackedBiLstmEncoder
from tests.numerics import NETWORK, assert_float32_close

pytestmark = pytest.mark.numerics  # compared across rounding paths: make test reruns it on AVX2


def test_layer_widths_and_masking():
    torch.manual_seed(0)
    encoder = StackedBiLstmEncoder(input_size=6, hidden_sizes=[5, 3], dropout=0.5).eval()
    assert [layer.get_output_dim() for layer in encoder.layers] == [10, 6]
    assert (encoder.get_input_dim(), encoder.get_output_dim()) == (6, 6)
    inputs = torch.randn(2, 4, 6)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    output = encoder(inputs, mask)
    assert output.shape == (2, 4, 6)
    assert torch.equal(output[1, 2:], torch.zeros(2, 6))
    # eval mode: no dropout, and a padded sentence equals the sentence alone
    alone = encoder(inputs[1:, :2], mask[1:, :2])
    assert_float32_close(alone[0], output[1, :2], NETWORK)
    assert torch.equal(encoder(inputs, mask), output)


def test_variational_dropout_drops_the_same_features_at_every_step_of_every_layer_input():
    torch.manual_seed(0)
    encoder = StackedBiLstmEncoder(input_size=8, hidden_sizes=[4, 4], dropout=0.5).train()
    seen = []
    for layer in encoder.layers:
        layer.register_forward_pre_hook(lambda module, args: seen.append(args[0].detach()))
    encoder(torch.ones(3, 5, 8), torch.ones(3, 5, dtype=torch.bool))
    first = seen[0]
    assert set(first.unique().tolist()) == {0.0, 2.0}  # inverted dropout at p = 0.5
    assert torch.equal(
        first, first[:, :1].expand_as(first)
    )  # one mask per sentence, all time steps
    second = seen[1]
    dropped = second == 0
    assert dropped.any() and torch.equal(
        dropped, dropped[:, :1].expand_as(dropped)
    )  # second layer too


def test_needs_a_layer():
    with pytest.raises(ValueError, match="hidden_sizes"):
        StackedBiLstmEncoder(input_size=4, hidden_sizes=[])
