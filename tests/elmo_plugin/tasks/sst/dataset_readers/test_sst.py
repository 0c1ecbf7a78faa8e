import pytest

from elmo_plugin.tasks.sst.dataset_readers.sst import FormatError, SstTaskReader
from tests.conftest import DATA

TREE = "(3 (2 It) (4 (4 (2 's) (4 (3 (2 a) (4 (3 lovely) (2 film))) (2 .)))))\n"


def test_phrase_level_training_keeps_phrases_of_four_or_more_tokens(tmp_path):
    (tmp_path / "t.txt").write_text(TREE)
    sentences = list(SstTaskReader().read(str(tmp_path / "t.txt")))
    assert [len(i["tokens"].tokens) for i in sentences] == [6]
    phrases = list(
        SstTaskReader(use_subtrees=True, min_phrase_length=4).read(str(tmp_path / "t.txt"))
    )
    lengths = sorted(len(i["tokens"].tokens) for i in phrases)
    assert lengths == [4, 5, 5, 6] and all(i["label"].label in {"3", "4"} for i in phrases)
    assert len(list(SstTaskReader(use_subtrees=True).read(str(tmp_path / "t.txt")))) > 3


def test_reads_sst_and_names_malformed_lines(tmp_path):
    assert len(list(SstTaskReader().read(str(DATA / "sst" / "dev.txt")))) == 1101
    (tmp_path / "bad.txt").write_text(TREE + "(2 (2 broken)\n")
    with pytest.raises(FormatError, match=r"bad.txt:2: not a PTB tree"):
        list(SstTaskReader().read(str(tmp_path / "bad.txt")))


@pytest.mark.parametrize(
    "text, message",
    [
        ("(3 (2 fine) (7 movie))\n", r"t.txt:1: sentiment label '7' is not one of SST's 0-4"),
        ("(3 (2 fine) (3 movie))\n(pos (2 a) (2 b))\n", r"t.txt:2: sentiment label 'pos'"),
        ("", r"t.txt: no trees"),
        ("(3 (2 caf\xe9))\n".encode("latin-1"), r"t.txt:1: not UTF-8 text"),
    ],
)
def test_bad_trees_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "t.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(FormatError, match=message):
        list(SstTaskReader(use_subtrees=True).read(str(path)))
