"""The one reading of "which device" for every entry point: a GPU id as AllenNLP numbers them
(-1 for the CPU), from whatever a user of the mirrored APIs or of PyTorch writes."""

import argparse
import numbers
import re
from typing import Union

import numpy
import torch

from elmo_bilm.utils.errors import UsageError

Device = Union[None, int, str, torch.device]


def cuda_device_of(device: Device = None) -> int:
    """A GPU id, -1 for the CPU, for a device as the entry points take it: None, GPU 0 when
    torch sees one, else the CPU (as bio_embeddings, ELMoForManyLangs and TensorFlow decide);
    an id as it is (a negative one, or its string, the CPU); `"cpu"`, `"cuda"`, `"cuda:N"` or a
    `torch.device`. Anything else, or a GPU this machine does not have (`available`), is a
    one-line `UsageError`."""
    return available(_device_id(device), device)


def available(cuda_device: int, given: Device = None) -> int:
    """`cuda_device` (a parsed id) if it is the CPU or a GPU torch sees; else one line (torch's
    own error came only at the first `.to()`, a driver's message or an assertion)."""
    count = torch.cuda.device_count()
    if cuda_device < 0 or cuda_device < count:
        return cuda_device
    named = f"device {cuda_device if given is None else given!r}"
    if count == 0:
        raise UsageError(f"{named}: no CUDA device is available here; use -1 or 'cpu' for the CPU")
    raise UsageError(
        f"{named}: this machine has {count} CUDA device(s), 0 to {count - 1}; -1 or 'cpu' for "
        "the CPU"
    )


def _device_id(device: Device) -> int:
    """`cuda_device_of`'s reading of `device`, whatever this machine has."""
    if device is None:
        return 0 if torch.cuda.is_available() else -1
    if isinstance(device, str):
        device = device.strip()
        if re.fullmatch(r"-?[0-9]+", device):
            device = int(device)  # "0", "-1": ids written in a config
    if isinstance(device, numbers.Integral) and not isinstance(device, (bool, numpy.bool_)):
        device = int(device)  # numpy's ids too (numpy.int64(-1) is the CPU, as -1 is)
        return device if device >= 0 else -1
    try:
        parsed = torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError, ValueError) as error:
        raise UsageError(f"device must be the CPU or a CUDA device, got {device!r}") from error
    if parsed.type == "cpu":
        return -1
    if parsed.type == "cuda":
        return parsed.index or 0
    raise UsageError(f"device must be the CPU or a CUDA device, got {parsed}")


def torch_device(device: Device = -1) -> torch.device:
    """The `torch.device` of `device` (read by `cuda_device_of`; a bare id -1 is the CPU)."""
    cuda_device = cuda_device_of(device)
    return torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")


def device_argument(text: str) -> int:
    """An argparse `type` for `--cuda-device`: what the API takes (`-1`, `0`, `cpu`, `cuda`,
    `cuda:1`), read by `cuda_device_of` into a GPU id (-1 the CPU); anything else refused at
    parse time, in argparse's one line (`PROG: error: argument --cuda-device: ...`). Whether
    this machine has the GPU is the run's check (`available`), after the other arguments."""
    try:
        return _device_id(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


device_argument.__name__ = "device"  # argparse names the type in some messages
