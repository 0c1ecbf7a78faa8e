import pytest

from elmo_plugin.tasks.snli.dataset_readers.snli import ElmoSnliReader, FormatError
from tests.conftest import DATA


def test_reads_sample_with_parse_tokenisation():
    instances = list(ElmoSnliReader().read(str(DATA / "format_samples" / "snli.jsonl")))
    assert len(instances) == 3
    premise = [t.text for t in instances[0]["premise"].tokens]
    assert premise == "A person on a horse jumps over a broken down airplane .".split()
    assert instances[0]["label"].label == "neutral"


def test_skips_unlabelled_and_names_bad_lines(tmp_path):
    good = '{"sentence1": "A b .", "sentence2": "C d .", "gold_label": "entailment"}'
    (tmp_path / "a.jsonl").write_text(good + "\n" + good.replace("entailment", "-") + "\n")
    assert len(list(ElmoSnliReader().read(str(tmp_path / "a.jsonl")))) == 1
    (tmp_path / "b.jsonl").write_text(good + "\n{not json\n")
    with pytest.raises(FormatError, match=r"b.jsonl:2: invalid JSON"):
        list(ElmoSnliReader().read(str(tmp_path / "b.jsonl")))
    (tmp_path / "c.jsonl").write_text('{"sentence1": "x", "gold_label": "neutral"}\n')
    with pytest.raises(FormatError, match=r"c.jsonl:1: missing sentence2"):
        list(ElmoSnliReader().read(str(tmp_path / "c.jsonl")))
