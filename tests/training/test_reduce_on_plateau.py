import subprocess
import sys

import torch
from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from tests.conftest import REPO_ROOT


def test_reduce_on_plateau_builds_with_verbose_and_halves_the_rate():
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=4e-4)
    scheduler = LearningRateScheduler.from_params(
        params=Params(
            {
                "type": "elmo_plugin_reduce_on_plateau",
                "mode": "max",
                "factor": 0.5,
                "patience": 0,
                "verbose": True,
            }
        ),
        optimizer=optimizer,
    )
    scheduler.step(0.8)
    scheduler.step(0.7)  # no improvement: halved
    assert optimizer.param_groups[0]["lr"] == 2e-4


def test_importing_the_plugin_leaves_allennlps_reduce_on_plateau_alone():
    """The plugin's scheduler has a name of its own: AllenNLP's `reduce_on_plateau` is AllenNLP's
    after the import (issue 58 item 3), and nothing is logged about it."""
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "import elmo_plugin\n"
        "from allennlp.training.learning_rate_schedulers import LearningRateScheduler\n"
        "from allennlp.training.learning_rate_schedulers import pytorch_lr_schedulers as torch_lr\n"
        "from elmo_plugin.training import ReduceOnPlateauScheduler\n"
        "by_name = LearningRateScheduler.by_name\n"
        "assert by_name('reduce_on_plateau') is torch_lr.ReduceOnPlateauLearningRateScheduler\n"
        "assert by_name('elmo_plugin_reduce_on_plateau') is ReduceOnPlateauScheduler\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
    assert "reduce_on_plateau" not in result.stderr
    assert "overwriting" not in result.stderr
