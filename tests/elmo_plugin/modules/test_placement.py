import pytest
from allennlp.common.checks import ConfigurationError

from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import ElmoOptions
from elmo_plugin.modules.placement import Placement
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def test_a_placement_knows_its_mixes():
    assert Placement("input").mixes == ("input",)
    assert Placement("output").mixes == ("output",)
    both = Placement("both")
    assert both.mixes == ("input", "output") and both.at_input and both.at_output
    assert not Placement("input").at_output and not Placement("output").at_input
    assert Placement.parse(None) is None and Placement.parse("both") == both
    assert both.indices(["output"]) == [1] and Placement("output").indices(["output"]) == [0]


def test_unknown_names_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="placement must be one of"):
        Placement("middle")
    with pytest.raises(ConfigurationError, match="has only the mixes \\['input'\\]"):
        Placement("input").indices(["output"])


def test_elmo_representations_take_one_mix_per_placement_mix():
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE)
    options = ElmoOptions(dropout=0.5)
    both = ElmoRepresentations(options, Placement("both"), bilm=bilm, dropped_by_model=["input"])
    assert len(both.scalar_mixes) == 2
    assert [d.p for d in both.dropouts] == [0.0, 0.5]  # the model drops the input ELMo itself
    output = ElmoRepresentations(options, Placement("output"), bilm=bilm)
    assert len(output.scalar_mixes) == 1 and output.dropouts[0].p == 0.5
    with pytest.raises(ConfigurationError, match="has only the mixes"):
        ElmoRepresentations(options, Placement("output"), bilm=bilm, dropped_by_model=["input"])
