import pytest

from elmo_plugin.tasks.common.conll2012 import FormatError
from elmo_plugin.tasks.srl.dataset_readers.srl import ElmoSrlReader
from tests.conftest import DATA

SAMPLE = DATA / "format_samples" / "srl_example.gold_conll"


def test_one_instance_per_predicate_with_bio_tags():
    instances = list(ElmoSrlReader().read(str(SAMPLE)))
    # sentence 1 has 2 predicates, 2 has 3, 3 has none (one all-O instance), 4 has 1
    assert len(instances) == 7
    first = instances[1]
    assert [t.text for t in first["tokens"].tokens][:3] == ["Mali", "government", "officials"]
    assert first["verb_indicator"].labels == [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    assert first["tags"].labels[4:10] == ["B-ARG1", "I-ARG1", "I-ARG1", "I-ARG1", "B-V", "B-ARG2"]
    assert first["metadata"]["verb"] == "was"
    without = [i for i in instances if sum(i["verb_indicator"].labels) == 0]
    assert len(without) == 1 and set(without[0]["tags"].labels) == {"O"}


def test_reads_a_directory_of_gold_conll_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.gold_conll").write_text(SAMPLE.read_text())
    (tmp_path / "a" / "x.gold_skel").write_text("not read\n")
    assert len(list(ElmoSrlReader().read(str(tmp_path)))) == 7


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
        list(ElmoSrlReader().read(str(tmp_path / "bad.gold_conll")))
