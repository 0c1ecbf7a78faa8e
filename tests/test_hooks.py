import subprocess
import sys

import numpy
import pytest
import torch

from tests.conftest import free_port


def test_checkpoints_with_numpy_scalars_load_with_the_safe_default(tmp_path):
    # elmo_plugin (imported by conftest) allow-lists numpy scalars for torch's weights-only loader
    state = {"metric_tracker": {"best": numpy.float64(0.25), "count": numpy.int64(3)}}
    torch.save(state, tmp_path / "training_state.th")
    loaded = torch.load(tmp_path / "training_state.th", weights_only=True)
    assert loaded["metric_tracker"]["best"] == 0.25 and loaded["metric_tracker"]["count"] == 3


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
