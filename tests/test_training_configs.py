"""Every shipped config parses, and the task configs carry the supplement's hyper-parameters."""

import os

import pytest
from allennlp.common import Params

from tests.conftest import REPO_ROOT

CONFIGS = sorted((REPO_ROOT / "training_config").glob("*.jsonnet"))


def _params(name: str) -> dict:
    return Params.from_file(str(REPO_ROOT / "training_config" / name)).as_dict()


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_config_parses(config):
    params = Params.from_file(str(config)).as_dict()
    assert {"dataset_reader", "model", "trainer", "train_data_path"} <= set(params)


def test_every_task_has_a_baseline_and_an_elmo_config():
    names = {path.name for path in CONFIGS}
    for task in (
        "snli_esim",
        "conll2003_crf_tagger",
        "sst_bcn",
        "squad_bidaf_selfattn",
        "srl_he2017",
        "coref_lee2017",
    ):
        assert {f"{task}.jsonnet", f"{task}_elmo.jsonnet"} <= names
        assert "elmo" not in str(_params(f"{task}.jsonnet")["model"].get("text_field_embedder", {}))


def test_squad_supplement_a4():
    params = _params("squad_bidaf_selfattn_elmo.jsonnet")
    model = params["model"]
    embedder = model["text_field_embedder"]
    assert (embedder["placement"], embedder["l2_coefficient"], embedder["do_layer_norm"]) == (
        "both",
        0.0,
        False,
    )
    assert model["phrase_layer"]["type"] == "elmo_plugin_output_elmo"
    assert (
        model["phrase_layer"]["encoder"]["type"] == "gru"
        and model["phrase_layer"]["encoder"]["hidden_size"] == 90
    )
    assert (model["hidden_dim"], model["dropout"], model["max_span_length"]) == (180, 0.2, 17)
    assert params["data_loader"]["batch_sampler"]["batch_size"] == 45
    assert params["trainer"]["optimizer"]["type"] == "adadelta"
    assert params["trainer"]["moving_average"] == {"type": "exponential", "decay": 0.999}


def test_srl_supplement_a5():
    params = _params("srl_he2017_elmo.jsonnet")
    model = params["model"]
    assert model["text_field_embedder"]["placement"] == "input"
    encoder = model["encoder"]
    assert encoder == {
        "type": "alternating_lstm",
        "input_size": 100
        + 100
        + 2 * int(os.environ["ELMO_PROJECTION_DIM"]),  # words + predicate + ELMo
        "hidden_size": 300,
        "num_layers": 8,
        "recurrent_dropout_probability": 0.1,
        "use_highway": True,
    }
    assert model["binary_feature_dim"] == 100
    assert params["trainer"]["optimizer"] == {
        "type": "adadelta",
        "lr": 1.0,
        "rho": 0.95,
        "eps": 1e-6,
    }
    assert params["trainer"]["grad_clipping"] == 1.0


def test_coref_supplement_a6():
    params = _params("coref_lee2017_elmo.jsonnet")
    model = params["model"]
    embedder = model["text_field_embedder"]
    assert (
        embedder["placement"],
        embedder["l2_coefficient"],
        embedder["do_layer_norm"],
        embedder["dropout"],
    ) == ("input", 0.0, False, 0.5)
    assert model["context_layer"]["hidden_size"] == 200 and model["context_layer"]["bidirectional"]
    assert (
        model["max_span_width"],
        model["spans_per_word"],
        model["max_antecedents"],
        model["feature_size"],
    ) == (10, 0.4, 250, 20)
    assert (
        model["mention_feedforward"]["hidden_dims"] == 150
        and model["mention_feedforward"]["num_layers"] == 2
    )
    assert params["data_loader"]["batch_sampler"]["batch_size"] == 1


def test_ner_supplement_a7():
    params = _params("conll2003_crf_tagger_elmo.jsonnet")
    model = params["model"]
    assert model["text_field_embedder"]["placement"] == "input"
    assert model["text_field_embedder"]["l2_coefficient"] == 0.1
    embedders = model["text_field_embedder"]["token_embedders"]
    assert embedders["tokens"]["embedding_dim"] == 50
    assert embedders["token_characters"]["embedding"]["embedding_dim"] == 16
    assert embedders["token_characters"]["encoder"]["num_filters"] == 128
    assert embedders["token_characters"]["encoder"]["ngram_filter_sizes"] == [3]
    assert model["encoder"] == {
        "type": "elmo_plugin_stacked_bilstm",
        "input_size": 50 + 128 + 2 * int(os.environ["ELMO_PROJECTION_DIM"]),
        "hidden_sizes": [200, 100],
        "dropout": 0.5,
    }
    assert (model["type"], model["constrain_crf_decoding"], model["label_encoding"]) == (
        "crf_tagger",
        True,
        "BIOUL",
    )
    assert params["trainer"]["optimizer"] == {"type": "adam", "lr": 0.001}
    assert params["trainer"]["grad_norm"] == 5.0
