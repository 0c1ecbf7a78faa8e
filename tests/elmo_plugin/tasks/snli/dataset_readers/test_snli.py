import pytest

from elmo_plugin.tasks.snli.dataset_readers.snli import FormatError, SnliTaskReader
from tests.conftest import DATA


def test_reads_sample_with_parse_tokenisation():
    instances = list(SnliTaskReader().read(str(DATA / "format_samples" / "snli.jsonl")))
    assert len(instances) == 3
    premise = [t.text for t in instances[0]["premise"].tokens]
    assert premise == "A person on a horse jumps over a broken down airplane .".split()
    assert instances[0]["label"].label == "neutral"


def test_skips_unlabelled_and_names_bad_lines(tmp_path):
    good = '{"sentence1": "A b .", "sentence2": "C d .", "gold_label": "entailment"}'
    (tmp_path / "a.jsonl").write_text(good + "\n" + good.replace("entailment", "-") + "\n")
    assert len(list(SnliTaskReader().read(str(tmp_path / "a.jsonl")))) == 1
    (tmp_path / "b.jsonl").write_text(good + "\n{not json\n")
    with pytest.raises(FormatError, match=r"b.jsonl:2: invalid JSON"):
        list(SnliTaskReader().read(str(tmp_path / "b.jsonl")))
    (tmp_path / "c.jsonl").write_text('{"sentence1": "x", "gold_label": "neutral"}\n')
    with pytest.raises(FormatError, match=r"c.jsonl:1: missing sentence2"):
        list(SnliTaskReader().read(str(tmp_path / "c.jsonl")))


def write_split(folder, split, s1, s2, labels):
    for name, lines in (("s1", s1), ("s2", s2), ("labels", labels)):
        (folder / f"{name}.{split}").write_text("".join(line + "\n" for line in lines))
    return str(folder / split)


def test_reads_the_bundled_line_format_and_slices():
    instances = list(SnliTaskReader().read(str(DATA / "snli_eval" / "dev")))
    assert len(instances) == 9842
    first = instances[0]
    assert [t.text for t in first["premise"].tokens][:3] == ["Two", "women", "are"]
    assert first["label"].label == "neutral"
    halves = [
        list(SnliTaskReader().read(str(DATA / "snli_eval" / f"test{part}")))
        for part in ("[:4912]", "[4912:]")
    ]
    assert [len(h) for h in halves] == [4912, 4912]
    whole = list(SnliTaskReader().read(str(DATA / "snli_eval" / "test")))
    text = lambda i: [t.text for t in i["hypothesis"].tokens]  # noqa: E731
    assert [text(i) for i in halves[0] + halves[1]] == [text(i) for i in whole]


def test_line_format_errors_name_file_and_line(tmp_path):
    path = write_split(tmp_path, "a", ["A b .", "C d ."], ["E f .", "G h ."], ["neutral"])
    with pytest.raises(FormatError, match=r"labels.a:2: file ends, but .*s1.a goes on"):
        list(SnliTaskReader().read(path))
    path = write_split(tmp_path, "b", ["A b ."], ["E f ."], ["maybe"])
    with pytest.raises(FormatError, match=r"labels.b:1: unknown label 'maybe'"):
        list(SnliTaskReader().read(path))
    path = write_split(tmp_path, "c", ["A b .", ""], ["E f .", "x"], ["neutral", "neutral"])
    with pytest.raises(FormatError, match=r"s1.c:2: empty line"):
        list(SnliTaskReader().read(path))


def test_a_given_tokenizer_is_used_whitespace_by_default(tmp_path):
    """A config's `tokenizer` reaches the reader (it was dropped for whitespace)."""
    from allennlp.common import Params
    from allennlp.data import DatasetReader

    (tmp_path / "a.jsonl").write_text(
        '{"sentence1": "Ab cd", "sentence2": "Ef", "gold_label": "entailment"}\n'
    )
    path = str(tmp_path / "a.jsonl")
    for tokenizer, premise in ((None, ["Ab", "cd"]), ({"type": "character"}, list("Ab cd"))):
        params = {"type": "elmo_plugin_snli", **({"tokenizer": tokenizer} if tokenizer else {})}
        reader = DatasetReader.from_params(Params(params))
        (instance,) = reader.read(path)
        assert [t.text for t in instance["premise"].tokens] == premise
