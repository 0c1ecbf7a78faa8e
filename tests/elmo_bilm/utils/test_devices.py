"""`elmo_bilm.utils.devices`, the one reading of a device for every entry point."""

import numpy
import pytest
import torch

from elmo_bilm.utils.devices import cuda_device_of, torch_device
from elmo_bilm.utils.errors import UsageError


@pytest.fixture
def four_gpus(monkeypatch):
    """The reading on a machine with four GPUs (whether one is there is `available`'s check)."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)


def test_devices_as_the_entry_points_take_them(four_gpus) -> None:
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


def test_numpy_ids_are_ids_as_python_ints_are(four_gpus) -> None:
    # numpy.int64(0) was read by torch.device, numpy.int64(-1) refused as no device
    assert cuda_device_of(numpy.int64(-1)) == -1 and cuda_device_of(numpy.int32(-5)) == -1
    assert cuda_device_of(numpy.int64(0)) == 0 and cuda_device_of(numpy.int16(2)) == 2
    assert torch_device(numpy.int64(-1)) == torch.device("cpu")
    assert cuda_device_of(" cuda:1 ") == 1 and cuda_device_of(" cpu") == -1


@pytest.mark.parametrize("bad", ["\u00b2", "\u00b9", numpy.bool_(True), numpy.float64(0.0), "+-1"])
def test_digits_only_python_reads_as_digits_and_numpy_bools(bad: object) -> None:
    # "²".isdigit(), and int("²") raised its own ValueError, not naming the device
    with pytest.raises(ValueError) as error:
        cuda_device_of(bad)  # type: ignore[arg-type]
    assert "\n" not in str(error.value) and "device must be" in str(error.value)


def test_the_argparse_type_reads_what_the_api_reads(monkeypatch) -> None:
    import argparse

    from elmo_bilm.utils.devices import device_argument

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)  # the run checks the machine
    assert [device_argument(t) for t in ("-1", "0", "cpu", "cuda", "cuda:1", " 2 ")] == [
        -1,
        0,
        -1,
        0,
        1,
        2,
    ]
    with pytest.raises(argparse.ArgumentTypeError, match="the CPU or a CUDA device, got 'gpu'"):
        device_argument("gpu")


@pytest.mark.parametrize("count", [0, 2])
@pytest.mark.parametrize("device, index", [(0, 0), ("cuda", 0), ("cuda:2", 2), (3, 3)])
def test_a_gpu_this_machine_lacks_is_one_line(monkeypatch, count, device, index) -> None:
    """Issue 88: `cuda_device=0` without a GPU was torch's error at the first `.to()` (a
    driver's message), in every API; now one line naming the device and the CPU's id."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    if index < count:
        assert cuda_device_of(device) == index
        return
    with pytest.raises(UsageError, match=f"device {device!r}: .*-1 or 'cpu'") as caught:
        cuda_device_of(device)
    assert "\n" not in str(caught.value)
    if count == 0:
        assert "no CUDA device is available" in str(caught.value)
