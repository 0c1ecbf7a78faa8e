"""A biLM trained from scratch starts as bilm-tf's does."""

import pytest
import torch

from elmo_bilm.model.bilm import BiLm

OPTIONS = {
    "char_cnn": {
        "activation": "relu",
        "embedding": {"dim": 16},
        "filters": [[1, 32], [2, 64]],
        "n_highway": 2,
    },
    "lstm": {"dim": 64, "projection_dim": 16, "n_layers": 2, "cell_clip": 3, "proj_clip": 3},
}


def test_initialisation_follows_bilm_tf():
    torch.manual_seed(0)
    bilm = BiLm(OPTIONS)
    cnn, lstm = bilm.char_cnn, bilm.lstm
    chars = cnn.char_embedding.weight
    assert (
        chars[0].abs().sum() == 0 and chars[1:].abs().max() <= 1.0 and chars[1:].abs().max() > 0.9
    )
    for conv in cnn.convolutions:
        assert conv.weight.abs().max() <= 0.05 and conv.bias.abs().sum() == 0
    for highway in cnn.highways:
        assert torch.all(highway.carry.bias == -2.0) and highway.transform.bias.abs().sum() == 0
        assert abs(highway.carry.weight.std().item() - 96**-0.5) < 0.01
    assert abs(cnn.projection.weight.std().item() - 96**-0.5) < 0.01
    # Glorot-uniform over each direction's whole [in + proj, 4 * dim] matrix: bound sqrt(6 / (32 + 256))
    bound = (6.0 / (16 + 16 + 256)) ** 0.5
    for w_x, w_h in zip(lstm.input_weights, lstm.recurrent_weights):
        for weight in (w_x, w_h):
            assert weight.abs().max() <= bound and weight.abs().max() > 0.9 * bound
    assert all(bias.abs().sum() == 0 for bias in lstm.biases)


def test_initialise_false_draws_no_initial_weights(monkeypatch):
    """A loader's `initialise=False` skips every bilm-tf draw (the LSTM's alone took 2.3 s of a
    paper-size load); the default still draws."""
    from elmo_bilm.model.char_cnn import CharCnnEncoder, Highway
    from elmo_bilm.model.lstm import ProjectedLstmStack

    def refuse(self) -> None:
        raise AssertionError(f"{type(self).__name__} drew its initial weights")

    for module in (CharCnnEncoder, Highway, ProjectedLstmStack):
        monkeypatch.setattr(module, "reset_parameters", refuse)
    bilm = BiLm(OPTIONS, initialise=False)
    assert all(not p.is_meta for p in bilm.parameters())
    with pytest.raises(AssertionError, match="drew its initial weights"):
        BiLm(OPTIONS)
