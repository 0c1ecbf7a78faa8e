import numpy
import torch


def test_checkpoints_with_numpy_scalars_load_with_the_safe_default(tmp_path):
    # elmo_plugin (imported by conftest) allow-lists numpy scalars for torch's weights-only loader
    state = {"metric_tracker": {"best": numpy.float64(0.25), "count": numpy.int64(3)}}
    torch.save(state, tmp_path / "training_state.th")
    loaded = torch.load(tmp_path / "training_state.th", weights_only=True)
    assert loaded["metric_tracker"]["best"] == 0.25 and loaded["metric_tracker"]["count"] == 3
