"""The AVX2 pass of `make test` really runs on AVX2 kernels (an ignored variable would pass
silently): the Makefile's `AVX2` variables, given to a fresh process, put torch on AVX2."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.numerics
def test_the_makefiles_avx2_settings_put_torch_on_avx2_kernels():
    line = next(
        line
        for line in (REPO_ROOT / "Makefile").read_text().splitlines()
        if line.startswith("AVX2 :=")
    )
    forced = dict(re.findall(r"(\w+)=(\S+)", line.split(":=", 1)[1]))
    assert forced.get("ATEN_CPU_CAPABILITY") == "avx2"
    result = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env={**os.environ, **forced},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "AVX2"
