"""The padded GRU / LSTM encoders against AllenNLP's own `gru` / `lstm` (packed) encoders."""

import copy
import warnings

import pytest
import torch
from allennlp.common import Params
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

import elmo_plugin  # noqa: F401

# float32: every output is a sum over at most a few hundred products of values below 10, computed
# in another order (another matmul shape) than the packed encoder's; 1e-5 is about 100 ulps there.
TOLERANCE = 1e-5


def _pair(kind: str, **params):
    torch.manual_seed(7)
    ours = Seq2SeqEncoder.from_params(Params({"type": f"elmo_plugin_{kind}", **params}))
    theirs = Seq2SeqEncoder.from_params(Params({"type": kind, **params}))
    theirs.load_state_dict(ours.state_dict())  # the same names: weights move either way
    return ours, theirs


def _batch(input_size: int):
    torch.manual_seed(3)
    lengths = torch.tensor([9, 4, 1, 0, 7])  # unsorted, one empty row
    mask = torch.arange(9).unsqueeze(0) < lengths.unsqueeze(1)
    inputs = torch.randn(len(lengths), 9, input_size) * mask.unsqueeze(-1)
    return inputs, mask


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize(
    "params",
    [
        {"num_layers": 1, "bidirectional": True},
        {"num_layers": 2, "bidirectional": True},
        {"num_layers": 2, "bidirectional": False},
        {"num_layers": 1, "bidirectional": True, "bias": False},
    ],
)
def test_outputs_and_gradients_match_allennlps_packed_encoder(kind, params):
    ours, theirs = _pair(kind, input_size=6, hidden_size=5, **params)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    assert ours.get_output_dim() == theirs.get_output_dim()
    assert ours.is_bidirectional() == theirs.is_bidirectional()
    results = []
    for encoder in (ours, theirs):
        inputs, mask = _batch(6)
        inputs.requires_grad_(True)
        output = encoder(inputs, mask)
        (output * torch.linspace(-1, 1, output.size(-1))).sum().backward()
        grads = {name: p.grad for name, p in encoder.named_parameters()}
        results.append((output, inputs.grad, grads))
    (ours_out, ours_in, ours_w), (theirs_out, theirs_in, theirs_w) = results
    assert ours_out.shape == theirs_out.shape == (5, 9, ours.get_output_dim())
    assert ours_out[~_batch(6)[1]].abs().max() == 0  # padding is zero
    torch.testing.assert_close(ours_out, theirs_out, atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(ours_in, theirs_in, atol=TOLERANCE, rtol=0)
    for name in ours_w:
        torch.testing.assert_close(ours_w[name], theirs_w[name], atol=TOLERANCE, rtol=TOLERANCE)


def test_the_reverse_direction_reads_each_sequence_from_its_own_end():
    """The backward direction starts at each row's last valid step, not at the batch's last step:
    what the padded steps hold reaches no output, and a change at a row's last valid step reaches
    all of that row's backward outputs and none of its forward outputs before it."""
    encoder, _ = _pair("gru", input_size=4, hidden_size=3, bidirectional=True)
    inputs, mask = _batch(4)
    with torch.no_grad():
        reference = encoder(inputs, mask)
        noisy_padding = inputs + torch.randn(inputs.shape) * (~mask).unsqueeze(-1)
        assert torch.equal(encoder(noisy_padding, mask), reference)
        changed = inputs.clone()
        changed[1, 3] += 1.0  # row 1 has 4 valid steps
        difference = (encoder(changed, mask) - reference).abs()
    assert difference[1, :3, :3].max() == 0  # forward outputs before the change
    assert (difference[1, :4, 3:].amax(dim=-1) > 0).all()  # every backward output of the row
    assert difference[1, 4:].max() == 0 and difference[[0, 2, 3, 4]].max() == 0


def test_dropout_between_layers_only_in_training():
    encoder, _ = _pair("lstm", input_size=4, hidden_size=3, num_layers=2, dropout=0.5)
    inputs, mask = _batch(4)
    encoder.eval()
    assert torch.equal(encoder(inputs, mask), encoder(inputs, mask))
    encoder.train()
    torch.manual_seed(0)
    first = encoder(inputs, mask)
    torch.manual_seed(1)
    assert not torch.equal(first, encoder(inputs, mask))


def test_moves_and_copies_with_its_parameters_only():
    encoder, _ = _pair("gru", input_size=4, hidden_size=3, bidirectional=True)
    assert [name for name, _ in encoder.named_parameters()] == [
        f"_module.{name}" for name, _ in encoder._module.named_parameters()
    ]
    copied = copy.deepcopy(encoder).double()
    inputs, mask = _batch(4)
    assert copied(inputs.double(), mask).dtype == torch.float64


def test_refuses_an_initial_state():
    encoder, _ = _pair("gru", input_size=4, hidden_size=3)
    inputs, mask = _batch(4)
    with pytest.raises(ValueError, match="zero state"):
        encoder(inputs, mask, hidden_state=torch.zeros(1, 5, 3))


@pytest.mark.parametrize("params", [{}, {"use_highway": False, "use_input_projection_bias": False}])
def test_alternating_lstm_matches_allennlps(params):
    """He et al.'s encoder, 3 layers (forwards, backwards, forwards), in evaluation: recurrent
    dropout set but off, as AllenNLP's applies its mask in training only."""
    params = {"input_size": 6, "hidden_size": 5, "num_layers": 3, **params}
    params["recurrent_dropout_probability"] = 0.3
    torch.manual_seed(7)
    ours = Seq2SeqEncoder.from_params(Params({"type": "elmo_plugin_alternating_lstm", **params}))
    theirs = Seq2SeqEncoder.from_params(Params({"type": "alternating_lstm", **params}))
    theirs.load_state_dict(ours.state_dict())
    assert set(ours.state_dict()) == set(theirs.state_dict())
    assert (ours.get_output_dim(), ours.is_bidirectional()) == (5, False)
    results = []
    for encoder in (ours.eval(), theirs.eval()):
        inputs, mask = _batch(6)
        inputs.requires_grad_(True)
        output = encoder(inputs, mask)
        (output * torch.linspace(-1, 1, 5)).sum().backward()
        results.append((output, inputs.grad, {n: p.grad for n, p in encoder.named_parameters()}))
    (ours_out, ours_in, ours_w), (theirs_out, theirs_in, theirs_w) = results
    assert ours_out[~_batch(6)[1]].abs().max() == 0
    torch.testing.assert_close(ours_out, theirs_out, atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(ours_in, theirs_in, atol=TOLERANCE, rtol=0)
    for name in ours_w:
        torch.testing.assert_close(ours_w[name], theirs_w[name], atol=TOLERANCE, rtol=TOLERANCE)


def test_alternating_lstm_drops_its_recurrent_state_in_training_only():
    torch.manual_seed(7)
    params = {"input_size": 4, "hidden_size": 3, "num_layers": 2}
    encoder = Seq2SeqEncoder.from_params(
        Params(
            {"type": "elmo_plugin_alternating_lstm", "recurrent_dropout_probability": 0.5, **params}
        )
    )
    inputs, mask = _batch(4)
    encoder.eval()
    evaluated = encoder(inputs, mask)
    encoder.train()
    torch.manual_seed(0)
    first = encoder(inputs, mask)
    torch.manual_seed(1)
    assert not torch.equal(first, encoder(inputs, mask))
    assert not torch.equal(first, evaluated)


def _ops(run) -> set:
    with torch.profiler.profile() as profile:
        run()
    return {event.name for event in profile.events()}


def test_the_lstm_does_not_run_on_onednns_rnn():
    """oneDNN's RNN (torch's choice for an unpacked LSTM on the CPU) corrupted the heap when a
    signal arrived while it ran (2 of 8 runs of a plain `torch.nn.LSTM` with a do-nothing
    handler; none with it off): the encoder keeps it off."""
    inputs, mask = _batch(4)
    plain = torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True)
    if "aten::mkldnn_rnn_layer" not in _ops(lambda: plain(inputs)):
        pytest.skip("this torch build does not run an LSTM on oneDNN")
    encoder, _ = _pair("lstm", input_size=4, hidden_size=3, bidirectional=True)
    assert "aten::mkldnn_rnn_layer" not in _ops(lambda: encoder(inputs, mask))


def test_keeping_onednn_off_changes_no_other_flag_and_warns_nothing():
    """Only oneDNN's `enabled` flag is switched, and back: setting its TF32 flag as well (what
    `torch.backends.mkldnn.flags(enabled=False)` alone does) warned on every forward pass."""
    inputs, mask = _batch(4)
    encoder, _ = _pair("lstm", input_size=4, hidden_size=3)
    before = (torch.backends.mkldnn.enabled, torch.backends.mkldnn.deterministic)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder(inputs, mask)
    assert (torch.backends.mkldnn.enabled, torch.backends.mkldnn.deterministic) == before
