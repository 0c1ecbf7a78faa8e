import pytest

from elmo_plugin.tasks.sst.dataset_readers.sst import ElmoSstReader, FormatError
from tests.conftest import DATA

TREE = "(3 (2 It) (4 (4 (2 's) (4 (3 (2 a) (4 (3 lovely) (2 film))) (2 .)))))\n"


def test_phrase_level_training_keeps_phrases_of_four_or_more_tokens(tmp_path):
    (tmp_path / "t.txt").write_text(TREE)
    sentences = list(ElmoSstReader().read(str(tmp_path / "t.txt")))
    assert [len(i["tokens"].tokens) for i in sentences] == [6]
    phrases = list(
        ElmoSstReader(use_subtrees=True, min_phrase_length=4).read(str(tmp_path / "t.txt"))
    )
    lengths = sorted(len(i["tokens"].tokens) for i in phrases)
    assert lengths == [4, 5, 5, 6] and all(i["label"].label in {"3", "4"} for i in phrases)
    assert len(list(ElmoSstReader(use_subtrees=True).read(str(tmp_path / "t.txt")))) > 3


def test_reads_sst_and_names_malformed_lines(tmp_path):
    assert len(list(ElmoSstReader().read(str(DATA / "sst" / "dev.txt")))) == 1101
    (tmp_path / "bad.txt").write_text(TREE + "(2 (2 broken)\n")
    with pytest.raises(FormatError, match=r"bad.txt:2: not a PTB tree"):
        list(ElmoSstReader().read(str(tmp_path / "bad.txt")))
