import tarfile
from types import SimpleNamespace

import torch

from elmo_plugin.training.optimizer_state import OPTIMIZER_STATE_NAME, OptimizerState


def model_and_optimizer(softmax_rows: int):
    torch.manual_seed(0)
    model = torch.nn.ModuleDict(
        {"lstm": torch.nn.Linear(4, 3), "softmax": torch.nn.Linear(3, softmax_rows)}
    )
    return model, torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)


def test_state_travels_through_the_archive_by_name_and_shape(tmp_path):
    model, optimizer = model_and_optimizer(5)
    for _ in range(3):
        optimizer.zero_grad()
        model["softmax"](model["lstm"](torch.randn(2, 4))).sum().backward()
        optimizer.step()
    OptimizerState(str(tmp_path)).on_end(SimpleNamespace(model=model, optimizer=optimizer))
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / OPTIMIZER_STATE_NAME, arcname=OPTIMIZER_STATE_NAME)

    # a new run over a different vocabulary: the LSTM continues, the softmax starts fresh
    new_model, new_optimizer = model_and_optimizer(7)
    callback = OptimizerState(str(tmp_path / "ft"), from_archive=str(tmp_path / "model.tar.gz"))
    callback.on_start(SimpleNamespace(model=new_model, optimizer=new_optimizer))
    old = optimizer.state_dict()["state"]
    new = new_optimizer.state_dict()["state"]
    assert torch.equal(new[0]["sum"], old[0]["sum"]) and torch.equal(new[1]["sum"], old[1]["sum"])
    assert not torch.equal(old[0]["sum"], torch.ones_like(old[0]["sum"]))
    assert torch.equal(new[2]["sum"], torch.ones(7, 3))  # the softmax: fresh
    assert new_optimizer.param_groups[0]["lr"] == 0.2

    # resumed from its own checkpoint: the archive's state is not loaded again
    again_model, again_optimizer = model_and_optimizer(5)
    resumed = OptimizerState(str(tmp_path / "ft"), from_archive=str(tmp_path / "model.tar.gz"))
    resumed.load_state_dict(callback.state_dict())
    resumed.on_start(SimpleNamespace(model=again_model, optimizer=again_optimizer))
    assert torch.equal(again_optimizer.state_dict()["state"][0]["sum"], torch.ones(3, 4))


def test_another_optimizer_type_starts_fresh(tmp_path):
    model, optimizer = model_and_optimizer(5)
    saved = {
        "optimizer": "Adam",
        "parameter_names": ["lstm.weight"],
        "state_dict": {"state": {0: {"exp_avg": torch.zeros(3, 4)}}},
    }
    assert OptimizerState.load_into(model, optimizer, saved) == 0


class Payload:
    """Unpickled with full pickle, creates the file `path` (a stand-in for any code)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_payload_in_the_archive_does_not_run(tmp_path, caplog):
    marker = tmp_path / "payload_ran"
    saved = {
        "optimizer": "Adagrad",
        "parameter_names": ["lstm.weight"],
        "state_dict": {"state": {}, "param_groups": []},
        "payload": Payload(str(marker)),
    }
    torch.save(saved, tmp_path / OPTIMIZER_STATE_NAME)
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / OPTIMIZER_STATE_NAME, arcname=OPTIMIZER_STATE_NAME)
    model, optimizer = model_and_optimizer(5)
    callback = OptimizerState(str(tmp_path / "ft"), from_archive=str(tmp_path / "model.tar.gz"))
    callback.on_start(SimpleNamespace(model=model, optimizer=optimizer))
    assert not marker.exists()
    assert "not loaded, the optimizer starts fresh" in caplog.text
    assert optimizer.state_dict()["state"][0]["sum"].eq(1.0).all()  # fresh accumulators
