import pytest

from elmo_bilm.model.vocab import read_vocab_file
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


def test_vocabulary_limits_that_would_drop_tokens_or_keep_none_are_refused(tmp_path):
    import pytest

    from elmo_plugin.lm.vocab_counts import build_vocab_file

    corpus = tmp_path / "c.txt"
    corpus.write_text("a b a\n")
    with pytest.raises(ValueError, match="at least 1"):
        build_vocab_file(f"text::{corpus}", str(tmp_path / "v.txt"), max_size=-1)
    with pytest.raises(ValueError, match="no token occurs 9 times"):
        build_vocab_file(f"text::{corpus}", str(tmp_path / "v.txt"), min_count=9)
    assert not (tmp_path / "v.txt").exists()
