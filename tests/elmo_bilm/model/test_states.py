"""`BiLm.states`, the carried LSTM states set from outside (simple_elmo's sessions, a saved
state put back): states of another biLM's shape are refused in one line naming what the LSTM
expects when they are set, not by a crash inside the LSTM at the next batch."""

import numpy
import pytest
import torch

from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.model.bilm import frozen
from elmo_bilm.utils.errors import UsageError
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

SENTENCES = [["the", "cat", "sat"], ["a", "dog"]]


@pytest.fixture(scope="module")
def bilm():
    bilm = load_bilm_tf(str(OPTIONS_FILE), str(WEIGHT_FILE)).eval()
    bilm.set_stateful(True)
    return bilm


def run(bilm, sentences=SENTENCES):
    with frozen(bilm):
        return torch.stack(bilm(bilm.batch_to_ids(sentences))["activations"])


def carried(bilm):
    bilm.reset_states()
    run(bilm)
    return bilm.states


def test_the_states_are_two_tensors_of_the_lstms_shape(bilm) -> None:
    h, c = carried(bilm)
    lstm = bilm.lstm
    assert h.shape == (lstm.n_layers, 2, 2 * lstm.projection_dim)
    assert c.shape == (lstm.n_layers, 2, 2 * lstm.dim)


@pytest.mark.parametrize(
    "damage",
    [
        "h narrower",
        "c narrower",
        "more layers",
        "fewer layers",
        "rows differ",
        "two-dimensional",
        "one tensor",
        "three tensors",
        "numpy arrays",
        "integer tensors",
    ],
)
def test_states_of_another_shape_are_one_line_naming_what_is_expected(bilm, damage) -> None:
    h, c = carried(bilm)
    states = {
        "h narrower": lambda: (h[..., :10], c),
        "c narrower": lambda: (h, c[..., :10]),
        "more layers": lambda: (torch.cat([h, h]), torch.cat([c, c])),
        "fewer layers": lambda: (h[:1], c[:1]),
        "rows differ": lambda: (h[:, :1], c),
        "two-dimensional": lambda: (h[0], c[0]),
        "one tensor": lambda: h,
        "three tensors": lambda: (h, c, h),
        "numpy arrays": lambda: (h.numpy(), c.numpy()),
        "integer tensors": lambda: (h.long(), c.long()),
    }[damage]()
    lstm = bilm.lstm
    with pytest.raises(UsageError) as error:
        bilm.states = states
    message = str(error.value)
    assert "\n" not in message
    assert f"({lstm.n_layers}, rows, {2 * lstm.projection_dim})" in message, message
    assert f"({lstm.n_layers}, rows, {2 * lstm.dim})" in message, message
    # nothing was set: the next batch runs on the states that were there
    assert bilm.states[0] is h and bilm.states[1] is c
    run(bilm)


def test_states_it_can_carry_are_still_taken(bilm) -> None:
    h, c = carried(bilm)
    following = run(bilm)
    for states in ((h, c), [h, c], iter([h, c]), (h.double(), c.double())):
        bilm.states = states
        assert torch.allclose(run(bilm), following, atol=1e-6)
    bilm.states = (h[:, :1], c[:, :1])  # fewer rows than the batch: the others start at zero
    run(bilm)
    for nothing in ((), [], None):
        bilm.states = nothing
        assert bilm.states == ()


@pytest.mark.parametrize("mode", ["no", "False", 0, 1, None, 0.0])
def test_a_mode_that_is_not_a_bool_is_refused_by_every_entry_point(bilm, mode) -> None:
    """`bool("no")` is true: a careless `stateful="no"` would carry states; every mirrored name
    sets the mode through `BiLm.set_stateful`, which refuses what is not a bool."""
    from elmo_bilm.dropins.allennlp import Elmo, ElmoEmbedder
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder
    from elmo_bilm.dropins.simple_elmo import ElmoModel
    from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

    files = (str(OPTIONS_FILE), str(WEIGHT_FILE))
    for make in (
        lambda: bilm.set_stateful(mode),
        lambda: ElmoEmbedder(*files, stateful=mode),
        lambda: Elmo(*files, stateful=mode),
        lambda: SeqVecEmbedder(0, options_file=files[0], weights_file=files[1], stateful=mode),
        lambda: ElmoModel().load(str(OPTIONS_FILE.parent), stateful=mode),
    ):
        with pytest.raises(ValueError, match="stateful must be True or False") as error:
            make()
        assert "\n" not in str(error.value)
    bilm.set_stateful(numpy.bool_(True))
    assert bilm.stateful is True
    bilm.set_stateful(False)
