"""The whole-process `elmo-embed` benchmark (`elmo_benchmarks.embed_cli`): its case, size and
precision options decide which commands run, on what."""

import json
import sys

import pytest

from elmo_benchmarks import embed_cli
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


@pytest.mark.slow  # four processes, two of them importing AllenNLP
def test_cases_paper_sentences_and_precisions_choose_the_runs(capsys, monkeypatch):
    tiny = {"options_file": str(OPTIONS_FILE), "weight_file": str(WEIGHT_FILE)}
    monkeypatch.setattr(embed_cli, "random_bilm_tf", lambda config: tiny)  # not the paper size
    argv = "embed_cli --cases paper --paper-sentences 5 --precisions float32 int8 --memory-lines"
    monkeypatch.setattr(sys, "argv", argv.split())
    embed_cli.main()
    out = capsys.readouterr().out
    records = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("BENCH ")]
    assert [r["command"] for r in records] == [
        "elmo-embed",
        "elmo-embed --precision int8",
        "allennlp elmo-embed",
        "AllenNLP Elmo script",
    ]
    assert {r["case"] for r in records} == {"5 sentences, paper"}
    for record in records:
        assert record["seconds"] > 0
        for mine in ("elmo-embed", "elmo-embed --precision int8"):
            assert record[f"speed-up of {mine}"] > 0
