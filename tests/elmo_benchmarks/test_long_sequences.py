"""The long-sequence benchmark (`elmo_benchmarks.long_sequences`): both sides run `elmo-embed` on the
same line and protein, the "before" side from the git revision's own package, and their vectors
are compared."""

import json
import sys

import h5py
import numpy
import pytest

from elmo_benchmarks import long_sequences
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


@pytest.mark.slow  # four elmo-embed processes
def test_both_sides_run_and_agree_on_the_tiny_bilm(capsys, monkeypatch) -> None:
    tiny = {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)}
    monkeypatch.setattr(long_sequences, "random_weights", lambda config: tiny)  # not the paper's
    argv = "long_sequences --cases 300,titin --residues 150 --max-tokens 64 --before-max 200"
    monkeypatch.setattr(sys, "argv", argv.split())
    long_sequences.main()
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    runs = [row for row in rows if "side" in row]
    assert [(row["case"], row["side"]) for row in runs] == [
        ("300", "after"),
        ("300", "before"),
        ("titin", "after"),
        ("titin", "before"),
    ]
    assert runs[1]["skipped"] == "longer than --before-max 200"  # 300 tokens: after only
    for row in (runs[0], runs[2], runs[3]):
        assert row["peak_rss_mb"] > 0 and row["seconds"] > 0 and row["output_mb"] > 0
    # the protein's 150 residues run in pieces of 64 after, uncut before: the same vectors
    (compared,) = [row for row in rows if "side" not in row]
    assert compared["case"] == "titin" and 0 <= compared["max_diff_of_scale"] <= 1e-5


@pytest.mark.slow  # two elmo-embed processes
def test_the_precision_reaches_elmo_embed(capsys, monkeypatch, tmp_path) -> None:
    tiny = {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)}
    monkeypatch.setattr(long_sequences, "random_weights", lambda config: tiny)
    vectors = {}
    for precision in ("float32", "int8"):
        keep = tmp_path / precision
        argv = f"long_sequences --cases 200 --sides after --max-tokens 64 --precision {precision}"
        monkeypatch.setattr(sys, "argv", [*argv.split(), "--keep", str(keep)])
        long_sequences.main()
        (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert row["precision"] == precision and row["peak_rss_mb"] > 0
        with h5py.File(keep / "200_after.hdf5", "r") as output:
            vectors[precision] = output["0"][()]
    # int8's products quantize (the character CNN's too): every layer differs from float32's
    assert vectors["int8"].shape == vectors["float32"].shape == (3, 200, 32)
    assert numpy.isfinite(vectors["int8"]).all()
    assert (numpy.abs(vectors["int8"] - vectors["float32"]).max(axis=(1, 2)) > 0).all()
