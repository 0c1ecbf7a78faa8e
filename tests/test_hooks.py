import pickle
import subprocess
import sys
from fractions import Fraction

import numpy
import pytest
import torch

from tests.conftest import free_port


def test_every_checkpointer_recovers_training_states_with_numpy_scalars(tmp_path):
    """AllenNLP's training states hold numpy scalars where a metric gives one (the metric tracker
    keeps `SpearmanCorrelation`'s, allennlp-models' coreference scores): torch >= 2.6's
    weights-only default refused them on `--recover`. Every checkpointer, AllenNLP's own
    included, loads them now (hook 3, issue 69 item 5); torch's own allow-list is left as it is,
    and a pickle holding anything else is still refused."""
    from allennlp.training.checkpointer import Checkpointer
    from allennlp.training.metric_tracker import MetricTracker
    from allennlp.training.metrics import SpearmanCorrelation

    from elmo_plugin.training.safe_checkpointer import SafeCheckpointer, install_checkpoint_loading

    spearman = SpearmanCorrelation()
    spearman(torch.tensor([1.0, 2.0, 3.0, 5.0]), torch.tensor([1.0, 2.0, 4.0, 4.0]))
    metric = spearman.get_metric()
    assert isinstance(metric, numpy.floating)  # AllenNLP's metric, as it is
    tracker = MetricTracker("+spearman", patience=2)
    tracker.add_metrics({"spearman": metric})
    assert isinstance(tracker.state_dict()["best_so_far"], numpy.floating)
    state = {"metric_tracker": tracker.state_dict(), "epoch": 0}
    torch.save({"w": torch.ones(1)}, tmp_path / "model_state_e0_b0.th")
    torch.save(state, tmp_path / "training_state_e0_b0.th")
    install_checkpoint_loading()  # installed at import: idempotent
    assert getattr(Checkpointer.load_checkpoint, "_elmo_plugin", False)
    for checkpointer in (Checkpointer(str(tmp_path)), SafeCheckpointer(str(tmp_path))):
        loaded = checkpointer.load_checkpoint()
        assert loaded is not None
        restored = MetricTracker("+spearman", patience=2)
        restored.load_state_dict(loaded.trainer_state["metric_tracker"])
        assert restored.state_dict()["best_so_far"] == metric
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(tmp_path / "training_state_e0_b0.th", weights_only=True)
    torch.save({"metric_tracker": {"odd": Fraction(1, 3)}}, tmp_path / "training_state_e0_b0.th")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        Checkpointer(str(tmp_path)).load_checkpoint()


@pytest.mark.slow
def test_process_group_is_destroyed_at_exit():
    # a worker that exits with its process group alive (as AllenNLP's do): the plugin's atexit
    # hook destroys it. atexit runs handlers last-in first-out, so the check registered before
    # importing the plugin runs after the plugin's hook.
    code = (
        "import atexit, os, torch.distributed as dist\n"
        "atexit.register(lambda: print('initialised at exit:', dist.is_initialized()))\n"
        "import elmo_plugin\n"
        f"os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='{free_port()}')\n"
        "dist.init_process_group('gloo', rank=0, world_size=1)\n"
        "print('initialised:', dist.is_initialized())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["initialised:", "True", "initialised", "at", "exit:", "False"]


def _ner_model(placement: str, wrap: bool, elmo_dim: int = 32):
    import json

    from _jsonnet import evaluate_snippet
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.models import Model

    from elmo_plugin.common.config_env import jsonnet_variables
    from tests.conftest import REPO_ROOT

    elmo = {"placement": placement, "l2_coefficient": 0.0, "do_layer_norm": False, "dropout": 0.5}
    config = f'(import "{REPO_ROOT}/training_config/conll2003_crf_tagger.libsonnet")(elmo={json.dumps(elmo)})'
    model = json.loads(evaluate_snippet("ner", config, ext_vars=jsonnet_variables()))["model"]
    if not wrap and model["encoder"]["type"] == "elmo_plugin_output_elmo":
        model["encoder"] = model["encoder"]["encoder"]
        model["encoder"]["input_size"] += elmo_dim  # widths agree: ELMo_out would be input
    elif wrap and model["encoder"]["type"] != "elmo_plugin_output_elmo":
        model["encoder"] = {
            "type": "elmo_plugin_output_elmo",
            "encoder": model["encoder"],
            "elmo_dim": 32,
        }
        model["encoder"]["encoder"]["input_size"] -= 32
    elif wrap:
        model["encoder"]["elmo_dim"] = elmo_dim
        model["encoder"]["encoder"]["input_size"] += 32 - elmo_dim
    vocab = Vocabulary(
        {"tokens": {"a": 1}, "labels": {"U-PER": 1, "O": 1}, "token_characters": {"a": 1}}
    )
    return Model.from_params(vocab=vocab, params=Params(model))


@pytest.mark.parametrize(
    "placement,wrap,elmo_dim,message",
    [
        ("output", False, 32, "has no elmo_plugin_output_elmo encoder"),
        ("both", False, 32, "has no elmo_plugin_output_elmo encoder"),
        ("input", True, 32, "no elmo_plugin_placement embedder with placement 'output'"),
        ("both", True, 16, "elmo_dim 16 but the biLM's ELMo vectors are 32 wide"),
    ],
)
def test_placement_contract_is_checked_at_construction(placement, wrap, elmo_dim, message):
    from allennlp.common.checks import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        _ner_model(placement, wrap, elmo_dim)
    _ner_model(placement, placement != "input")  # the shipped wiring builds


def test_placement_contract_install_is_idempotent():
    from allennlp.models import Model

    from elmo_plugin.modules import placement_contract

    before = Model.from_params.__func__
    placement_contract.install()
    placement_contract.install()
    assert Model.from_params.__func__ is before  # installed once, at import: not wrapped again
