"""Issue 89: `elmo_bilm.elmo_lstm.ElmoLstm` as AllenNLP 2.10's `allennlp.modules.elmo_lstm.ElmoLstm`
(what its `tests/modules/elmo_test.py` and `elmo_lstm_test.py` rely on): the constructor's
arguments, `load_weights` of a bilm-tf file, `(num_layers, batch, T, 2 * hidden)` outputs zero at
padding, and the states carried between calls, compared with AllenNLP's on the same weights."""

import json

import pytest
import torch

from elmo_bilm.elmo_lstm import ElmoLstm
from elmo_bilm.utils.files import FormatError, UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE
from tests.numerics import NETWORK, assert_float32_close


def _arguments() -> dict:
    lstm = json.loads(OPTIONS_FILE.read_text())["lstm"]
    return dict(
        input_size=lstm["projection_dim"],
        hidden_size=lstm["projection_dim"],
        cell_size=lstm["dim"],
        num_layers=lstm["n_layers"],
        memory_cell_clip_value=lstm["cell_clip"],
        state_projection_clip_value=lstm["proj_clip"],
    )


def test_elmo_lstm_equals_allennlp_call_after_call() -> None:
    from allennlp.modules.elmo_lstm import ElmoLstm as Theirs

    theirs, mine = Theirs(**_arguments()), ElmoLstm(**_arguments())
    theirs.load_weights(str(WEIGHT_FILE))
    mine.load_weights(str(WEIGHT_FILE))
    generator = torch.Generator().manual_seed(0)
    width = _arguments()["input_size"]
    for rows, lengths in ((3, [5, 2, 4]), (4, [1, 6, 3, 6])):
        inputs = torch.randn(rows, max(lengths), width, generator=generator)
        mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
        inputs = inputs * mask[..., None]
        with torch.no_grad():
            reference, output = theirs(inputs, mask), mine(inputs, mask)
        assert output.shape == reference.shape == (2, rows, max(lengths), 2 * width)
        assert torch.all(output[:, ~mask] == 0)
        assert_float32_close(output, reference, NETWORK)
    for got, want in zip(mine._states, theirs._states):
        assert_float32_close(got, want, NETWORK)
    mine.reset_states()
    assert mine._states == ()


def test_elmo_lstm_refuses_what_it_cannot_run(tmp_path) -> None:
    with pytest.raises(UsageError, match="recurrent_dropout_probability"):
        ElmoLstm(4, 4, 8, 1, recurrent_dropout_probability=0.1)
    wrong = ElmoLstm(**{**_arguments(), "cell_size": 3})
    with pytest.raises(FormatError):
        wrong.load_weights(str(WEIGHT_FILE))
    junk = tmp_path / "junk.hdf5"
    junk.write_bytes(b"not hdf5")
    with pytest.raises(FormatError, match="junk.hdf5"):
        ElmoLstm(**_arguments()).load_weights(str(junk))
