import gzip

import pytest

from elmo_plugin.lm.dataset_readers.lm_corpus import FormatError, LmCorpusReader
from tests.conftest import DATA


def texts(instances):
    return [[t.text for t in instance["tokens"].tokens] for instance in instances]


def test_plain_text_adds_boundaries_skips_blank_lines(tmp_path):
    (tmp_path / "a.txt").write_text("the cat sat .\n\n   \na dog\n")
    assert texts(LmCorpusReader().read(str(tmp_path / "a.txt"))) == [
        ["<S>", "the", "cat", "sat", ".", "</S>"],
        ["<S>", "a", "dog", "</S>"],
    ]


def test_gzip_glob_of_shards_and_directory(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    with gzip.open(shards / "news.en-00001-of-00002.gz", "wt") as handle:
        handle.write("second shard\n")
    (shards / "news.en-00000-of-00002").write_text("first shard\n")
    expected = [["<S>", "first", "shard", "</S>"], ["<S>", "second", "shard", "</S>"]]
    assert texts(LmCorpusReader().read(str(shards / "news.en-*-of-00002*"))) == expected
    assert texts(LmCorpusReader().read(str(shards))) == expected


def test_long_sentences_are_split_not_dropped(tmp_path):
    (tmp_path / "a.txt").write_text(" ".join(str(i) for i in range(7)) + "\n")
    pieces = texts(LmCorpusReader(max_sentence_length=3).read(str(tmp_path / "a.txt")))
    assert pieces == [
        ["<S>", "0", "1", "2", "</S>"],
        ["<S>", "3", "4", "5", "</S>"],
        ["<S>", "6", "</S>"],
    ]


def test_wikitext_drops_headings(tmp_path):
    (tmp_path / "w.tokens").write_text(
        " \n = Valkyria = \n \n Senjō no Valkyria 3 .\n = = Gameplay = = \n"
    )
    assert texts(LmCorpusReader(corpus_format="wikitext").read(str(tmp_path / "w.tokens"))) == [
        ["<S>", "Senjō", "no", "Valkyria", "3", ".", "</S>"]
    ]
    # plain text keeps them
    assert len(texts(LmCorpusReader().read(str(tmp_path / "w.tokens")))) == 3


def test_task_text_formats_and_list_of_prefixed_paths():
    reader = LmCorpusReader()
    conll = next(iter(reader.read(f"conll2003::{DATA / 'conll2003' / 'eng.testa'}")))
    assert texts([conll])[0][:4] == ["<S>", "CRICKET", "-", "LEICESTERSHIRE"]
    both = reader.read(
        [
            f"ptb_trees::{DATA / 'format_samples' / 'sst.txt'}",
            f"conll2003::{DATA / 'conll2003' / 'eng.testa'}",
        ]
    )
    first = texts([next(iter(both))])[0]
    assert "(" not in " ".join(first) and first[0] == "<S>"


def test_reading_is_lazy(tmp_path):
    # garbage far into the file is only met when reading gets there
    path = tmp_path / "big.txt"
    path.write_bytes(b"first sentence\n" * 2000 + b"\xff\xfe bad\n")
    instances = iter(LmCorpusReader().read(str(path)))
    assert texts([next(instances)]) == [["<S>", "first", "sentence", "</S>"]]
    with pytest.raises(FormatError, match=r"big.txt:2001: not UTF-8"):
        list(instances)


def test_bad_inputs_name_the_file(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"\x00\x01\x02binary" * 10)
    with pytest.raises(FormatError, match="model.bin: looks like a binary file"):
        list(LmCorpusReader().read(str(tmp_path / "model.bin")))
    words = " ".join(f"w{i * 7919 % 100003}" for i in range(20000)).encode()
    (tmp_path / "broken.gz").write_bytes(gzip.compress(words)[:-500])  # truncated download
    with pytest.raises(FormatError, match="broken.gz.*read failed"):
        list(LmCorpusReader().read(str(tmp_path / "broken.gz")))
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(FormatError, match="empty.txt: empty corpus"):
        list(LmCorpusReader().read(str(tmp_path / "empty.txt")))
    with pytest.raises(FormatError, match="nothing-\\*.txt: no corpus files"):
        list(LmCorpusReader().read(str(tmp_path / "nothing-*.txt")))
    with pytest.raises(FormatError, match="missing.txt: cannot read"):
        list(LmCorpusReader().read(str(tmp_path / "missing.txt")))
    with pytest.raises(FormatError, match="unknown corpus format 'tsv'"):
        list(LmCorpusReader().read(f"tsv::{tmp_path / 'empty.txt'}"))
    (tmp_path / "trees.txt").write_text("(3 (2 fine) (2 tree))\nnot a tree\n")
    with pytest.raises(FormatError, match="trees.txt:2: expected a PTB tree"):
        list(LmCorpusReader(corpus_format="ptb_trees").read(str(tmp_path / "trees.txt")))
