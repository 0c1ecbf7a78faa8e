"""The AVX2 pass of `make test` really runs on AVX2 kernels (an ignored variable would pass silently)."""

import os

import pytest
import torch


@pytest.mark.numerics
def test_forced_cpu_capability_is_in_effect():
    forced = os.environ.get("ATEN_CPU_CAPABILITY")
    if forced is None:
        pytest.skip("not the forced-ISA pass")
    assert torch.backends.cpu.get_cpu_capability() == forced.upper()
