import inspect

import pytest
from allennlp.common import Params
from allennlp.models import Model
from allennlp.modules.text_field_embedders import TextFieldEmbedder
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_plugin.modules.elmo_options import ElmoOptions, option_names
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def test_every_component_takes_the_same_option_names():
    for component in (
        TokenEmbedder.by_name("elmo_plugin_token_embedder"),
        TextFieldEmbedder.by_name("elmo_plugin_placement"),
    ):
        parameters = inspect.signature(component.__init__).parameters
        assert set(option_names()) <= set(parameters), component
        assert parameters["dropout"].default == ElmoOptions.dropout
    bcn = inspect.signature(Model.by_name("elmo_plugin_bcn").__init__).parameters
    assert bcn["elmo"].annotation == ElmoOptions or "ElmoOptions" in str(bcn["elmo"].annotation)


def test_options_reach_the_mixes_and_unknown_ones_are_named():
    embedder = TokenEmbedder.from_params(
        Params(
            {
                "type": "elmo_plugin_token_embedder",
                "options_file": str(OPTIONS_FILE),
                "weight_file": str(WEIGHT_FILE),
                "dropout": 0.25,
                "l2_coefficient": 0.5,
                "do_layer_norm": True,
                "cache_activations": False,
            }
        )
    )
    mix = embedder.elmo.scalar_mixes[0]
    assert (
        embedder.elmo.dropouts[0].p == 0.25
        and mix.l2_coefficient == 0.5
        and mix.do_layer_norm
        and embedder.elmo.cache is None
    )
    with pytest.raises(TypeError, match="unknown ELMo option"):
        TokenEmbedder.by_name("elmo_plugin_token_embedder")(
            options_file=str(OPTIONS_FILE), weight_file=str(WEIGHT_FILE), droput=0.1
        )
