import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model

from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def bcn_params(**changes):
    params = {
        "type": "elmo_plugin_bcn",
        "text_field_embedder": {
            "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 4}}
        },
        "embedding_dropout": 0.5,
        "pre_encode_feedforward": {
            "input_dim": 4 + 32, "num_layers": 1, "hidden_dims": [4], "activations": ["relu"],
        },
        "encoder": {"type": "lstm", "input_size": 4, "hidden_size": 4, "bidirectional": True},
        "integrator": {"type": "lstm", "input_size": 24, "hidden_size": 4, "bidirectional": True},
        "integrator_dropout": 0.1,
        "output_layer": {
            "input_dim": 32, "num_layers": 1, "hidden_dims": [5], "activations": ["linear"],
        },
        "elmo_placement": "input",
        "elmo": {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)},
    }  # fmt: skip
    params.update(changes)
    return Params(params)


VOCAB = Vocabulary(tokens_to_add={"tokens": ["a"], "labels": ["0", "1", "2", "3", "4"]})


def test_the_plugins_keys_build_a_bcn():
    model = Model.from_params(bcn_params(), vocab=VOCAB)
    assert model._use_input_elmo and not model._use_integrator_output_elmo


@pytest.mark.parametrize(
    "changes",
    [
        {"use_input_elmo": True, "use_integrator_output_elmo": False},
        {"elmo": {"type": "elmo", "options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE),
                  "num_output_representations": 1}},
    ],
)  # fmt: skip
def test_allennlp_models_bcn_keys_say_what_replaces_them(changes):
    with pytest.raises(
        ConfigurationError, match='set `elmo_placement` \\("input" for use_input_elmo'
    ):
        Model.from_params(bcn_params(**changes), vocab=VOCAB)
