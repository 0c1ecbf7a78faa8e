import pytest

from elmo_plugin.tasks.common.conll2012 import FormatError
from elmo_plugin.tasks.srl.dataset_readers.srl import SrlTaskReader
from tests.conftest import DATA

SAMPLE = DATA / "format_samples" / "srl_example.gold_conll"


def test_one_instance_per_predicate_with_bio_tags():
    instances = list(SrlTaskReader(predicates="all").read(str(SAMPLE)))
    # sentence 1 has 2 predicates, 2 has 3 (one nominal: "hearings"), 3 none (no instance), 4 has 1
    assert [i["metadata"]["verb"] for i in instances] == [
        "say", "was", "rested", "hearings", "is", "is"
    ]  # fmt: skip
    verbal = list(SrlTaskReader().read(str(SAMPLE)))  # the default: He et al.'s verbal predicates
    assert [i["metadata"]["verb"] for i in verbal] == ["say", "was", "rested", "is", "is"]
    first = instances[1]
    assert [t.text for t in first["tokens"].tokens][:3] == ["Mali", "government", "officials"]
    assert first["verb_indicator"].labels == [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    assert first["tags"].labels[4:10] == ["B-ARG1", "I-ARG1", "I-ARG1", "I-ARG1", "B-V", "B-ARG2"]
    assert first["metadata"]["verb"] == "was"
    assert all(sum(i["verb_indicator"].labels) == 1 for i in instances)


def propbank_slice(tmp_path, lines=1090):
    """The first sentences of PropBank EWT train (1,090 lines: 167 predicates, 139 of them VB*,
    and the emoticon `:)` that the OntoNotes tree parser cannot read)."""
    with open(DATA / "propbank_ewt" / "train.gold_conll", encoding="utf-8") as handle:
        head = [next(handle) for _ in range(lines)]
    path = tmp_path / "ewt.gold_conll"
    path.write_text("".join(head))
    return path


def test_propbank_ewt_predicates_and_labels(tmp_path):
    path = propbank_slice(tmp_path)
    verbal = list(SrlTaskReader().read(str(path)))
    every = list(SrlTaskReader(predicates="all").read(str(path)))
    assert (len(verbal), len(every)) == (139, 167)
    assert any(":)" in i["metadata"]["words"] for i in verbal)
    labels = {tag for i in every for tag in i["tags"].labels}
    assert {"B-V", "B-ARG0", "B-ARG1", "B-C-ARG1"} <= labels
    nominal = [i for i in every if i not in verbal]
    assert nominal  # nouns and adjectives are predicates in this PropBank release


def test_propbank_ewt_malformed_row_names_file_and_line(tmp_path):
    path = propbank_slice(tmp_path)
    rows = path.read_text().splitlines()
    rows[6] = rows[6].replace("(ARG1*)", "(ARG1*", 1)  # line 7: an argument left open
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(
        FormatError,
        match=r"ewt.gold_conll:2: predicate-argument column 12 opens 3 spans and closes 2",
    ):
        list(SrlTaskReader().read(str(path)))
    with pytest.raises(ValueError, match="predicates must be one of"):
        SrlTaskReader(predicates="nominal")


def test_reads_a_directory_of_gold_conll_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.gold_conll").write_text(SAMPLE.read_text())
    (tmp_path / "a" / "x.gold_skel").write_text("not read\n")
    assert len(list(SrlTaskReader().read(str(tmp_path)))) == 5


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda rows: rows.__setitem__(3, " ".join(rows[3].split()[:8])),
            r"bad.gold_conll:4: 8 columns",
        ),
        (
            lambda rows: rows.__setitem__(1, rows[1].replace("(ARG0*", "(ARG0(*", 1)),
            r"bad.gold_conll:2: predicate-argument column 12 opens",
        ),
        (
            lambda rows: rows.__setitem__(4, rows[4].replace(" 3 ", " 2 ", 1)),
            r"bad.gold_conll:5: word number '2'",
        ),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, damage, message):
    rows = SAMPLE.read_text().splitlines()
    damage(rows)
    (tmp_path / "bad.gold_conll").write_text("\n".join(rows) + "\n")
    with pytest.raises(FormatError, match=message):
        list(SrlTaskReader().read(str(tmp_path / "bad.gold_conll")))
