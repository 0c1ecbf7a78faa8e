"""AllenNLP's `reduce_on_plateau` on this torch (issue 69 item 5, hook 8 of `elmo_plugin.hooks`)."""

import logging
import subprocess
import sys

import pytest
import torch
from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from tests.conftest import REPO_ROOT

METRICS = [0.8, 0.7, 0.9, 0.85, 0.84, 0.95, 0.6, 0.6, 0.6]  # validation accuracy per epoch


def _scheduler(name: str, optimizer: torch.optim.Optimizer, **extra):
    settings = {"type": name, "mode": "max", "factor": 0.5, "patience": 0, **extra}
    return LearningRateScheduler.from_params(params=Params(settings), optimizer=optimizer)


@pytest.mark.parametrize("name", ["reduce_on_plateau", "elmo_plugin_reduce_on_plateau"])
def test_reduce_on_plateau_follows_torchs_schedule(name):
    """Both names build (`verbose` accepted) and give torch's own `ReduceLROnPlateau` schedule
    (what AllenNLP's class did on the torch it was released with), state dict included."""
    ours = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=4e-4)
    plain = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=4e-4)
    scheduler = _scheduler(name, ours, verbose=True, cooldown=1, min_lr=1e-5)
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(
        plain, mode="max", factor=0.5, patience=0, cooldown=1, min_lr=1e-5
    )
    rates = []
    for metric in METRICS:
        scheduler.step(metric)
        reference.step(metric)
        assert ours.param_groups[0]["lr"] == plain.param_groups[0]["lr"]
        rates.append(ours.param_groups[0]["lr"])
    assert rates[:3] == [4e-4, 2e-4, 2e-4] and min(rates) < 2e-4  # it does reduce
    assert scheduler.state_dict() == reference.state_dict()


def test_verbose_logs_each_reduction_and_only_then(caplog):
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=4e-4)
    loud = _scheduler("reduce_on_plateau", optimizer, verbose=True)
    with caplog.at_level(logging.INFO, logger="elmo_plugin.training.reduce_on_plateau"):
        loud.step(0.8)
        loud.step(0.9)
        loud.step(0.7)  # no improvement: halved
    assert [r.getMessage() for r in caplog.records] == [
        "Epoch 3: reducing learning rate of group 0 to 2.0000e-04."
    ]
    caplog.clear()
    quiet = _scheduler("reduce_on_plateau", optimizer)
    with caplog.at_level(logging.INFO, logger="elmo_plugin.training.reduce_on_plateau"):
        quiet.step(0.8)
        quiet.step(0.7)
    assert optimizer.param_groups[0]["lr"] == 1e-4 and not caplog.records


def test_importing_the_plugin_fixes_allennlps_reduce_on_plateau():
    """Without the plugin AllenNLP's `reduce_on_plateau` fails on this torch (the break the hook
    exists for); after `import elmo_plugin` AllenNLP's name is the plugin's subclass of AllenNLP's
    class, the plugin's own name the same class; installing twice changes nothing."""
    code = (
        "import torch\n"
        "from allennlp.common import Params\n"
        "from allennlp.training.learning_rate_schedulers import LearningRateScheduler\n"
        "from allennlp.training.learning_rate_schedulers import pytorch_lr_schedulers as torch_lr\n"
        "def build():\n"
        "    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)\n"
        "    params = Params({'type': 'reduce_on_plateau'})\n"
        "    return LearningRateScheduler.from_params(params=params, optimizer=optimizer)\n"
        "try:\n"
        "    build()\n"
        "    print('built without the plugin')\n"
        "except TypeError as error:\n"
        "    print('without the plugin:', error)\n"
        "import elmo_plugin\n"
        "from elmo_plugin import hooks\n"
        "from elmo_plugin.training import ReduceOnPlateauScheduler\n"
        "from elmo_plugin.training import reduce_on_plateau\n"
        "reduce_on_plateau.install()\n"
        "by_name = LearningRateScheduler.by_name\n"
        "assert by_name('reduce_on_plateau') is ReduceOnPlateauScheduler\n"
        "assert by_name('elmo_plugin_reduce_on_plateau') is ReduceOnPlateauScheduler\n"
        "assert issubclass(ReduceOnPlateauScheduler, torch_lr.ReduceOnPlateauLearningRateScheduler)\n"
        "assert isinstance(build(), torch_lr.ReduceOnPlateauLearningRateScheduler)\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "ok"
    if "verbose" in torch.optim.lr_scheduler.ReduceLROnPlateau.__init__.__code__.co_varnames:
        assert lines[0] == "built without the plugin"  # an older torch: nothing to fix
    else:
        assert "unexpected keyword argument 'verbose'" in lines[0]
