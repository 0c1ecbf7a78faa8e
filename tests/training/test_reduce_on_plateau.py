import torch
from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler


def test_reduce_on_plateau_builds_with_verbose_and_halves_the_rate():
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=4e-4)
    scheduler = LearningRateScheduler.from_params(
        params=Params(
            {
                "type": "reduce_on_plateau",
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
