import json

import pytest

from elmo_plugin.tasks.squad.dataset_readers.squad import FormatError, SquadTaskReader
from tests.conftest import DATA

SAMPLE = DATA / "format_samples" / "squad.json"


def test_answers_map_to_token_spans_and_unmappable_ones_are_counted():
    reader = SquadTaskReader()
    instances = list(reader.read(str(SAMPLE)))
    # "Father Julius Nieuwl" ends inside a token: skipped for training, with its question
    assert len(instances) == 4
    assert reader.counts == {"mapped": 6, "unmappable": 1, "skipped_questions": 1}
    first = instances[0]
    tokens = [t.text for t in first["passage"].tokens]
    assert tokens[first["span_start"].sequence_index : first["span_end"].sequence_index + 1] == [
        "Saint",
        "Bernadette",
        "Soubirous",
    ]
    assert first["metadata"]["answer_texts"] == ["Saint Bernadette Soubirous"]
    assert first["metadata"]["id"] == "5733be284776f41900661182"

    evaluation = SquadTaskReader(skip_unmappable=False)
    assert len(list(evaluation.read(str(SAMPLE)))) == 5  # kept with its covering token span
    assert evaluation.counts == {"mapped": 6, "inexact": 1}


def test_answers_not_in_the_passage_or_past_its_limit_are_unmappable(tmp_path):
    data = json.loads(SAMPLE.read_text())
    qas = data["data"][0]["paragraphs"][1]["qas"]
    qas[0]["answers"][0]["answer_start"] += 1  # text no longer at answer_start
    (tmp_path / "s.json").write_text(json.dumps(data))
    reader = SquadTaskReader(skip_unmappable=False)
    assert len(list(reader.read(str(tmp_path / "s.json")))) == 4
    assert reader.counts["unmappable"] == 1 and reader.counts["skipped_questions"] == 1
    limited = SquadTaskReader(passage_length_limit=8)  # 8 tokens: only "1882" (token 1) fits
    instances = list(limited.read(str(SAMPLE)))
    assert [i["metadata"]["answer_texts"] for i in instances] == [["1882"]]


def test_malformed_records_name_file_line_and_path(tmp_path):
    (tmp_path / "broken.json").write_text('{"data": [\n{"title": "x",\n "paragraphs": [}\n]}')
    with pytest.raises(FormatError, match=r"broken.json:3: invalid JSON"):
        list(SquadTaskReader().read(str(tmp_path / "broken.json")))
    data = json.loads(SAMPLE.read_text())
    del data["data"][0]["paragraphs"][1]["qas"][2]["question"]
    text = json.dumps(data, indent=1)
    (tmp_path / "missing.json").write_text(text)
    line = text[: text.index('"5733b1da4776f41900661067"')].count("\n") + 1
    with pytest.raises(
        FormatError,
        match=rf"missing.json:{line}: data\[0\].paragraphs\[1\].qas\[2\]: missing or not a str: 'question'",
    ):
        list(SquadTaskReader().read(str(tmp_path / "missing.json")))
