"""Every shipped config parses, and the task configs carry the supplement's hyper-parameters."""

import os
import re

import pytest
import torch
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
        model["phrase_layer"]["encoder"]["type"] == "elmo_plugin_gru"
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
        "type": "elmo_plugin_alternating_lstm",
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


ELMO_SWITCHES = ("placement", "l2_coefficient", "do_layer_norm", "dropout", "layers", "gamma")


@pytest.mark.parametrize(
    "config", [c for c in CONFIGS if c.name.endswith("_elmo.jsonnet")], ids=lambda p: p.name
)
def test_elmo_configs_have_every_switch_and_a_seed(config, tmp_path, monkeypatch):
    text = config.read_text()
    for switch in (*ELMO_SWITCHES, "seed"):
        assert re.search(rf"^  {switch}=", text, re.MULTILINE), switch  # a top-level argument
    assert "5.5B" not in text  # the paper's biLM: the 1B Word Benchmark (Sec. 3.4)
    # the arguments reach the ELMo options and the seeds; the rest keep the config's defaults
    call = tmp_path / "call.jsonnet"
    call.write_text(f'(import "{config}")(layers="top", gamma=false, seed=7)')
    monkeypatch.setenv("SEED", "3")
    default = Params.from_file(str(config)).as_dict()
    params = Params.from_file(str(call)).as_dict()
    model = params["model"]
    options = model.get("elmo") or model["text_field_embedder"]
    assert (options["layers"], options["gamma"]) == ("top", False)
    assert (params["random_seed"], params["numpy_seed"], params["pytorch_seed"]) == (7, 7, 7)
    assert default["random_seed"] == 3
    default_options = default["model"].get("elmo") or default["model"]["text_field_embedder"]
    assert {k: v for k, v in options.items() if k not in ("layers", "gamma")} == {
        k: v for k, v in default_options.items() if k not in ("layers", "gamma")
    }


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_every_config_recovers_exactly(config):
    """`--recover` retraces the run for every shipped config (docs/reliability.md)."""
    callbacks = _params(config.name)["trainer"].get("callbacks", [])
    assert {"type": "elmo_plugin_exact_recovery"} in callbacks


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_every_config_logs_the_whole_runs_progress(config):
    """Epoch k of n and the run's ETA after each epoch (`elmo_plugin_run_progress`)."""
    callbacks = _params(config.name)["trainer"].get("callbacks", [])
    assert {"type": "elmo_plugin_run_progress"} in callbacks


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_validation_batches_are_deterministic(config):
    params = _params(config.name)
    if config.name.startswith("bilm"):
        return
    loader = params.get("validation_data_loader")
    assert loader is not None, "the training loader shuffles; validation needs its own"
    sampler = loader.get("batch_sampler", loader)
    assert sampler.get("shuffle") is False
    assert sampler.get("type") != "bucket" or sampler.get("padding_noise") == 0.0


@pytest.mark.parametrize("name", ["bilm_pretrain.jsonnet", "bilm_wikipedia.jsonnet"])
def test_pretraining_configs_stream_and_scale_the_loss_as_bilm_tf(name):
    """Memory bounded by a buffer of sentences, not by the corpus; bilm-tf's loss x unroll_steps."""
    params = _params(name)
    for loader in ("data_loader", "validation_data_loader"):
        assert params[loader]["max_instances_in_memory"] <= 8192
        assert params[loader]["batch_sampler"]["type"] == "bucket"
    assert params["model"]["loss_scale"] == 20
    assert params["model"]["num_samples"] is not None
    assert params["trainer"]["optimizer"]["type"] == "adagrad"
    # the optimizer state goes into the archive, for fine-tuning
    assert {"type": "elmo_plugin_optimizer_state"} in params["trainer"]["callbacks"]
    assert params["include_in_archive"] == ["optimizer_state.th"]


def test_snli_supplement_a3():
    params = _params("snli_esim_elmo.jsonnet")
    model = params["model"]
    assert params["trainer"]["grad_norm"] == 5.0
    assert (model["type"], model["attention_dropout"], model["dropout"]) == (
        "elmo_plugin_esim",
        0.5,
        0.5,
    )
    embedder = model["text_field_embedder"]
    assert (embedder["placement"], embedder["do_layer_norm"], embedder["l2_coefficient"]) == (
        "both",
        True,
        0.001,
    )
    baseline = _params("snli_esim.jsonnet")["model"]
    assert "regularizer" not in baseline and "attention_dropout" not in baseline


def test_snli_regulariser_reaches_exactly_the_recurrent_and_feedforward_matrices():
    from allennlp.data import DatasetReader, Vocabulary
    from allennlp.models import Model

    params = Params.from_file(str(REPO_ROOT / "training_config" / "snli_esim_elmo.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    model_params = params.pop("model")
    ((pattern, _),) = model_params.as_dict()["regularizer"]["regexes"]
    model = Model.from_params(vocab=vocab, params=model_params)
    regularised = {name for name, _ in model.named_parameters() if re.search(pattern, name)}
    expected = {
        f"{module}.{weight}"
        for module in ("_encoder.encoder._module", "_inference_encoder._module")
        for weight in (
            "weight_ih_l0",
            "weight_hh_l0",
            "weight_ih_l0_reverse",
            "weight_hh_l0_reverse",
        )
    } | {
        "_projection_feedforward.1._linear_layers.0.weight",
        "_output_feedforward._linear_layers.0.weight",
        "_output_logit._linear_layers.0.weight",
    }
    assert regularised == expected
    # and the attention dropout sits between the attention and the projection feed-forward
    assert model._projection_feedforward[0].p == 0.5


def test_sst_output_network_is_two_relu_layers_with_dropout():
    for name in ("sst_bcn.jsonnet", "sst_bcn_elmo.jsonnet"):
        output = _params(name)["model"]["output_layer"]
        assert "pool_sizes" not in output  # not BCN's maxout
        assert (output["hidden_dims"], output["activations"], output["dropout"]) == (
            [1200, 600, 5],
            ["relu", "relu", "linear"],
            [0.2, 0.3, 0.0],
        )


def test_ner_early_stopping_decides():
    trainer = _params("conll2003_crf_tagger_elmo.jsonnet")["trainer"]
    assert (trainer["num_epochs"], trainer["patience"]) == (75, 25)
    assert trainer["patience"] < trainer["num_epochs"]


def test_elmo_width_follows_the_options_file_changed_after_import(monkeypatch, repo_root):
    """A script that points ELMO_OPTIONS_FILE at another biLM after importing the plugin gets
    configs of that biLM's width (not the width read at import), by path or by name."""
    from allennlp.common import Params

    from elmo_bilm.sources.published import local_files

    options, weights = local_files("wikipedia_1024")
    config = str(repo_root / "training_config" / "conll2003_crf_tagger_elmo.jsonnet")
    monkeypatch.setenv("ELMO_OPTIONS_FILE", options)
    monkeypatch.setenv("ELMO_WEIGHT_FILE", weights)
    params = Params.from_file(config)
    assert params["model"]["encoder"]["input_size"] == 50 + 128 + 2 * 128
    monkeypatch.setenv("ELMO_OPTIONS_FILE", "wikipedia_1024")  # a name: no weight file needed
    monkeypatch.delenv("ELMO_WEIGHT_FILE")
    params = Params.from_file(config).as_dict()
    assert params["model"]["encoder"]["input_size"] == 50 + 128 + 2 * 128
    embedder = params["model"]["text_field_embedder"]
    assert embedder["options_file"] == "wikipedia_1024" and embedder["weight_file"] == ""


def test_sst_relu_layers_get_he_initialisation(repo_root):
    """The ReLU layers (pre-encode feed-forward, the output network's two hidden layers) start
    with He's variance 2 / fan_in, the final linear layer and the LSTMs with their defaults."""
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.models import Model

    params = Params.from_file(str(repo_root / "training_config" / "sst_bcn.jsonnet"))
    vocab = Vocabulary(tokens_to_add={"tokens": ["a"], "labels": ["0", "1", "2", "3", "4"]})
    torch.manual_seed(0)
    model = Model.from_params(params.pop("model"), vocab=vocab)
    for layer in [
        model._pre_encode_feedforward._linear_layers[0],
        *model._output_layer._linear_layers[:2],
    ]:
        fan_in = layer.weight.shape[1]
        assert abs(layer.weight.std().item() - (2 / fan_in) ** 0.5) < 0.05 * (2 / fan_in) ** 0.5
    last = model._output_layer._linear_layers[2]
    assert last.weight.std().item() < 0.8 * (2 / last.weight.shape[1]) ** 0.5  # not He


def test_snli_epoch_cap_is_the_configs_argument_not_the_data_path(monkeypatch):
    """The cap is `num_epochs` (8 by default, the README's headline run), whatever `SNLI_TRAIN`
    names: a slice of the bundled dev pairs (the headline test's) or another file gets the same;
    `elmo-table1` passes each scale's cap (the `full` scale the paper's 75)."""
    from elmo_plugin.analysis import table1

    snli = os.path.join(os.environ["ELMO_PLUGIN_DATA"], "snli_eval")
    for train in (f"{snli}/dev", f"{snli}/dev[:96]", f"{snli}/test[:100]"):
        monkeypatch.setenv("SNLI_TRAIN", train)
        for name in ("snli_esim.jsonnet", "snli_esim_elmo.jsonnet"):
            assert _params(name)["trainer"]["num_epochs"] == 8, (train, name)
    passed = {scale: tasks["snli"].overrides for scale, tasks in table1.SCALES.items()}
    assert all("trainer.num_epochs" in overrides for overrides in passed.values())  # every scale
    caps = {scale: passed[scale]["trainer.num_epochs"] for scale in ("cpu", "cpu_long", "full")}
    assert caps == {"cpu": 8, "cpu_long": 24, "full": 75}
