import pytest

from elmo_bilm.vocab import read_vocab_file
from elmo_plugin.lm.vocab_counts import build_vocab_file


def test_vocab_file_is_frequency_sorted_with_specials_first(tmp_path):
    (tmp_path / "a.txt").write_text("b a c a\nb a d\n")
    (tmp_path / "b.txt").write_text("c e\n")
    out = tmp_path / "vocab.txt"
    lines = build_vocab_file(
        [f"text::{tmp_path / 'a.txt'}", f"text::{tmp_path / 'b.txt'}"], str(out), min_count=2
    )
    assert lines == ["<S>", "</S>", "<UNK>", "a", "b", "c"] == read_vocab_file(out)
    capped = build_vocab_file(
        f"text::{tmp_path / 'a.txt'}", str(tmp_path / "capped.txt"), max_size=2
    )
    assert capped == ["<S>", "</S>", "<UNK>", "a", "b"]
    with pytest.raises(FileExistsError):
        build_vocab_file(f"text::{tmp_path / 'a.txt'}", str(out))
