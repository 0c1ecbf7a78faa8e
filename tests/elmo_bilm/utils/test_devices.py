"""`elmo_bilm.utils.devices`, the one reading of a device for every entry point."""

import pytest
import torch

from elmo_bilm.utils.devices import cuda_device_of, torch_device


def test_devices_as_the_entry_points_take_them() -> None:
    assert cuda_device_of(None) == (0 if torch.cuda.is_available() else -1)
    cases = {"cpu": -1, "cuda": 0, "cuda:2": 2, 3: 3, -1: -1, -7: -1, "0": 0, " -1 ": -1}
    assert {device: cuda_device_of(device) for device in cases} == cases
    assert cuda_device_of(torch.device("cuda", 1)) == 1
    assert cuda_device_of(torch.device("cpu")) == -1
    assert torch_device(-1) == torch.device("cpu")
    assert torch_device("cuda:1") == torch.device("cuda", 1)
    assert torch_device(2) == torch.device("cuda", 2)


@pytest.mark.parametrize("bad", ["gpu", "gpu:x", "", "mps", "meta", True, 1.5, [0], "cuda:-1"])
def test_anything_else_is_one_line(bad: object) -> None:
    with pytest.raises(ValueError) as error:
        cuda_device_of(bad)  # type: ignore[arg-type]
    assert "\n" not in str(error.value) and "device" in str(error.value)
