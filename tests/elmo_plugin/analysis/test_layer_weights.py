"""Figure 2's report (`mix_weights`) says where each ELMo mix goes, whatever model holds it."""

import pytest

from elmo_plugin.analysis.layer_weights import mix_weights
from elmo_plugin.modules.text_field_embedders import ElmoPlacementEmbedder
from elmo_plugin.token_embedders import ElmoPluginTokenEmbedder
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

FILES = {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)}


@pytest.mark.parametrize(
    "placement, expected",
    [("input", ["input"]), ("output", ["output"]), ("both", ["input", "output"])],
)
def test_every_mix_of_a_placement_embedder_says_where_it_goes(placement, expected):
    mixes = mix_weights(ElmoPlacementEmbedder({}, placement=placement, **FILES))
    assert [mix["placement"] for mix in mixes] == expected
    assert all(sum(mix["weights"]) == pytest.approx(1.0) for mix in mixes)


def test_the_token_embedders_mix_is_an_input_mix():
    assert [mix["placement"] for mix in mix_weights(ElmoPluginTokenEmbedder(**FILES))] == ["input"]
