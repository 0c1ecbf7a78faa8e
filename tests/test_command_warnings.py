"""A command's warning is one line (`NAME: warning: ...`, not Python's two with a source line),
and under `PYTHONWARNINGS=error` one line and exit 1, not a traceback: the bfloat16 fallback of a
CPU without the instructions, through `elmo_bilm.utils.files.reports_errors`."""

import warnings
from pathlib import Path

import pytest
import torch

from elmo_bilm.cli.embed import main as embed_main
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


@pytest.fixture
def no_bfloat16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")


def arguments(tmp_path: Path) -> list:
    (tmp_path / "in.txt").write_text("The cat sat .\n")
    return [
        str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--precision", "bfloat16",
        "--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE),
    ]  # fmt: skip


def test_the_fallback_warning_is_one_line(tmp_path: Path, no_bfloat16: None, capsys) -> None:
    assert embed_main(arguments(tmp_path)) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(lines) == 1 and lines[0].startswith("elmo-embed: warning: precision 'bfloat16'")


def test_warnings_as_errors_are_one_line_and_exit_1(
    tmp_path: Path, no_bfloat16: None, capsys
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert embed_main(arguments(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().startswith(
        "elmo-embed: error: precision 'bfloat16'"
    )
    assert not (tmp_path / "out.hdf5").exists()
