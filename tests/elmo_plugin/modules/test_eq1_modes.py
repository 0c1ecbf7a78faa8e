"""Eq. (1) modes (Table 2, Supplement A.2) on every ELMo component: all layers or the top layer
only, with or without a trainable gamma."""

import itertools
import json

import pytest
import torch
from _jsonnet import evaluate_snippet
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.modules.text_field_embedders import TextFieldEmbedder
from allennlp.modules.token_embedders import TokenEmbedder

from elmo_plugin.common.config_env import jsonnet_variables
from elmo_plugin.modules.scalar_mix import ElmoScalarMix
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

MODES = list(itertools.product(("all", "top"), (True, False)))
FILES = {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)}


def token_embedder(layers: str, gamma: bool) -> torch.nn.Module:
    return TokenEmbedder.from_params(
        Params({"type": "elmo_plugin_token_embedder", "layers": layers, "gamma": gamma, **FILES})
    )


def placement_embedder(layers: str, gamma: bool) -> torch.nn.Module:
    return TextFieldEmbedder.from_params(
        Params(
            {
                "type": "elmo_plugin_placement",
                "token_embedders": {},
                "placement": "both",
                "l2_coefficient": 0.1,
                "layers": layers,
                "gamma": gamma,
                **FILES,
            }
        )
    )


def bcn(layers: str, gamma: bool) -> torch.nn.Module:
    elmo = {
        "placement": "both",
        "l2_coefficient": 0.1,
        "do_layer_norm": False,
        "dropout": 0.5,
        "layers": layers,
        "gamma": gamma,
    }
    config = f'(import "{REPO_ROOT}/training_config/sst_bcn.libsonnet")(elmo={json.dumps(elmo)})'
    params = Params(json.loads(evaluate_snippet("bcn", config, ext_vars=jsonnet_variables())))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(str(REPO_ROOT / "fixtures" / "sst" / "tiny.txt")))
    return Model.from_params(vocab=vocab, params=params.pop("model"))


@pytest.mark.parametrize("build", [token_embedder, placement_embedder, bcn])
@pytest.mark.parametrize("layers,gamma", MODES)
def test_trainable_parameters_of_each_mode(build, layers, gamma):
    mixes = [
        module for module in build(layers, gamma).modules() if isinstance(module, ElmoScalarMix)
    ]
    assert mixes
    for mix in mixes:
        trainable = {name.split(".")[0] for name, p in mix.named_parameters() if p.requires_grad}
        assert trainable == ({"scalar_parameters"} if layers == "all" else set()) | (
            {"gamma"} if gamma else set()
        )
        if layers == "top":
            assert mix.normalized_weights().tolist() == [0.0, 0.0, 1.0]
            assert not mix.penalized  # nothing to penalise: no trainable s
        else:
            assert mix.penalized or mix.l2_coefficient == 0
        assert mix.gamma.item() == 1.0


@pytest.mark.numerics
def test_top_only_is_gamma_times_the_top_layer(fixture_sentences):
    from allennlp.modules.elmo import batch_to_ids

    char_ids = batch_to_ids(fixture_sentences[0])
    embedder = token_embedder("top", True).eval()
    embedder.elmo.dropouts[0].p = 0.0
    with torch.no_grad():
        embedder.elmo.scalar_mixes[0].gamma.fill_(2.5)
        output = embedder.elmo.bilm(char_ids)
        layers = output["activations"]
        assert torch.equal(embedder(char_ids), 2.5 * layers[-1])
        # the top layer is read alone (no zero weight times the others): a NaN below stays there
        layers[0] = torch.full_like(layers[0], float("nan"))
        assert torch.equal(embedder.elmo.mix(layers, output["mask"])[0], 2.5 * layers[-1])


def test_bad_modes_are_named():
    with pytest.raises(ConfigurationError, match="layers must be one of"):
        token_embedder("middle", True)
    with pytest.raises(ConfigurationError, match="scalar_mix_parameters"):
        TokenEmbedder.from_params(
            Params(
                {
                    "type": "elmo_plugin_token_embedder",
                    "layers": "top",
                    "scalar_mix_parameters": [0.0, 0.0, 1.0],
                    **FILES,
                }
            )
        )
