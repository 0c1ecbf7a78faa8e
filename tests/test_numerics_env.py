"""The AVX2 passes of `make test` really run on AVX2 kernels (an ignored variable would pass
silently): the Makefile's `AVX2` variables, given to a fresh process, put torch on AVX2, and its
`EMULATED_AVX2` command runs Python on a CPU without AVX-512 and without VNNI."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def makefile_value(name: str) -> str:
    line = next(
        line
        for line in (REPO_ROOT / "Makefile").read_text().splitlines()
        if line.startswith(f"{name} :=")
    )
    return line.split(":=", 1)[1].strip()


@pytest.mark.numerics
def test_the_makefiles_avx2_settings_put_torch_on_avx2_kernels():
    forced = dict(re.findall(r"(\w+)=(\S+)", makefile_value("AVX2")))
    assert forced.get("ATEN_CPU_CAPABILITY") == "avx2"
    result = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env={**os.environ, **forced},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "AVX2"


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="no qemu-x86_64 (qemu-user)")
def test_the_makefiles_emulated_cpu_lacks_avx512_and_vnni():
    """fbgemm's int8 products read VNNI from the CPU itself: under the emulator they take the
    AVX2 kernels and `elmo_bilm.model.int8` its 7-bit inputs, and oneDNN's int8 route is not
    offered (no VNNI, no AMX: no warning lines either)."""
    probe = (
        "import torch; from elmo_bilm.model import int8; "
        "print(torch.backends.cpu.get_cpu_capability(), torch.cpu._is_vnni_supported(), "
        "int8.REDUCE_RANGE, int8.ONEDNN)"
    )
    result = subprocess.run(
        [*shlex.split(makefile_value("EMULATED_AVX2")), sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["AVX2", "False", "True", "False"]
    assert "warning" not in result.stderr
