"""Every console script given a path that does not exist says so in one line (`NAME: error:
...`, naming the path) and exits 1: the one command contract (`elmo_bilm.utils.files.reports_errors`)."""

import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from tests.conftest import OPTIONS_FILE, WEIGHT_FILE

BIN = Path(sys.executable).parent
MISSING = "DOES-NOT-EXIST"


def cases(tmp: Path) -> List[List[str]]:
    missing = str(tmp / MISSING)
    text = tmp / "in.txt"
    text.write_text("a b\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    return [
        ["elmo-embed", missing, str(tmp / "out.hdf5"), *files],
        ["elmo-embed", str(text), str(tmp / "out.hdf5"), "--options-file", missing],
        ["elmo-convert", missing, str(tmp / "out")],
        ["elmo-export-onnx", str(tmp / "x.onnx"), "--options-file", missing],
        ["elmo-embed-corpus", missing, str(tmp / "corpus"), *files],
        ["elmo-plugin", "elmo-embed", missing, str(tmp / "out2.hdf5"), *files],
    ]


@pytest.mark.parametrize("index", range(6))
def test_a_missing_path_is_one_line_and_exit_1(tmp_path: Path, index: int) -> None:
    command = cases(tmp_path)[index]
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        capture_output=True,
        text=True,
        timeout=600,  # an elmo-plugin start imports AllenNLP: room for a slow machine
        env={**os.environ, "RAY_ADDRESS": ""},
    )
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(lines) == 1 and MISSING in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith(
        f"{command[1] if command[0] == 'elmo-plugin' else command[0]}: error:"
    )
