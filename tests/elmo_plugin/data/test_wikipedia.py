import gzip
import os

import pytest

from elmo_plugin.data.wikipedia import FormatError, prepare_corpus, wikiextractor_paragraphs
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from tests.conftest import DATA

SAMPLE = """<doc id="1" url="http://x" title="Cats">
Cats

The cat (Felis catus) is a small mammal. It is kept as a pet! Dr. Smith didn't agree.
Cats sleep a lot.
</doc>
<doc id="2" url="http://y" title="Dogs">
Dogs

Dogs bark.
</doc>
"""


def test_paragraphs_drop_titles_and_markup(tmp_path):
    (tmp_path / "wiki_00").write_text(SAMPLE)
    assert list(wikiextractor_paragraphs(str(tmp_path / "wiki_00"))) == [
        "The cat (Felis catus) is a small mammal. It is kept as a pet! Dr. Smith didn't agree.",
        "Cats sleep a lot.",
        "Dogs bark.",
    ]


def test_sentence_per_line_shards_readable_by_the_corpus_reader(tmp_path):
    with gzip.open(tmp_path / "wiki_00.gz", "wt") as handle:
        handle.write(SAMPLE)
    (output,) = prepare_corpus([str(tmp_path / "wiki_00.gz")], str(tmp_path / "out"))
    with gzip.open(output, "rt") as handle:
        lines = handle.read().splitlines()
    assert lines == [
        "The cat ( Felis catus ) is a small mammal .",
        "It is kept as a pet !",
        "Dr. Smith did n't agree .",
        "Cats sleep a lot .",
        "Dogs bark .",
    ]
    sentences = [
        [t.text for t in i["tokens"].tokens]
        for i in LmCorpusReader().read(f"text::{tmp_path / 'out'}")
    ]
    assert sentences[1] == ["<S>", "It", "is", "kept", "as", "a", "pet", "!", "</S>"]
    assert not list((tmp_path / "out").glob("*.partial"))


def test_existing_outputs_are_kept_unless_overwrite(tmp_path):
    (tmp_path / "wiki_00").write_text(SAMPLE)
    (tmp_path / "out").mkdir()
    with gzip.open(tmp_path / "out" / "wiki_00.txt.gz", "wt") as handle:
        handle.write("from an earlier run\n")
    (output,) = prepare_corpus([str(tmp_path / "wiki_00")], str(tmp_path / "out"))
    assert gzip.open(output, "rt").read() == "from an earlier run\n"
    prepare_corpus([str(tmp_path / "wiki_00")], str(tmp_path / "out"), overwrite=True)
    assert gzip.open(output, "rt").read().startswith("The cat")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            SAMPLE.replace('</doc>\n<doc id="2"', '<doc id="2"', 1),
            r"wiki_00:6: <doc> inside an unclosed <doc>",
        ),
        ("stray text\n" + SAMPLE, r"wiki_00:1: text outside <doc>"),
        (SAMPLE.rsplit("</doc>", 1)[0], r"wiki_00:10: end of file inside <doc>"),
    ],
)
def test_malformed_input_names_file_and_line_and_leaves_no_output(tmp_path, text, message):
    (tmp_path / "wiki_00").write_text(text)
    with pytest.raises(FormatError, match=message):
        prepare_corpus([str(tmp_path / "wiki_00")], str(tmp_path / "out"))
    assert list((tmp_path / "out").iterdir()) == []


def test_bundled_wikipedia_shard():
    paragraphs = list(wikiextractor_paragraphs(str(DATA / "wikipedia" / "AA_wiki_00.gz")))
    assert paragraphs[0].startswith("Anarchism is a political philosophy")
    assert not any(p.startswith("<doc") or p == "</doc>" for p in paragraphs)


def test_corpus_reader_reads_raw_wikipedia_on_the_fly(tmp_path):
    (tmp_path / "wiki_00").write_text(SAMPLE)
    prepared = prepare_corpus([str(tmp_path / "wiki_00")], str(tmp_path / "out"))
    on_the_fly = [
        [t.text for t in i["tokens"].tokens]
        for i in LmCorpusReader().read(f"wikiextractor::{tmp_path / 'wiki_00'}")
    ]
    with gzip.open(prepared[0], "rt") as handle:
        assert on_the_fly == [["<S>", *line.split(), "</S>"] for line in handle.read().splitlines()]


@pytest.mark.slow
def test_cli_prepares_a_directory(tmp_path, repo_root):
    from tests.elmo_plugin.commands.test_elmo_embed import allennlp

    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki" / "wiki_00").write_text(SAMPLE)
    result = allennlp("elmo-prepare-corpus", tmp_path / "wiki", tmp_path / "out", cwd=repo_root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sentence-splitting and tokenising" in result.stderr  # progress bar
    assert gzip.open(tmp_path / "out" / "wiki_00.txt.gz", "rt").read().count("\n") == 5


def test_wikiextractor_layout_keeps_every_subfolder(tmp_path):
    """WikiExtractor writes text/AA/wiki_00, text/AB/wiki_00, ...: the top folder is searched
    recursively and each file named by its path below it, so no shard overwrites another."""
    for folder, text in (
        ("AA", "<doc id=1>\nT\nFirst one.\n</doc>\n"),
        ("AB", "<doc id=2>\nT\nSecond one.\n</doc>\n"),
    ):
        (tmp_path / "text" / folder).mkdir(parents=True)
        (tmp_path / "text" / folder / "wiki_00").write_text(text)
    outputs = prepare_corpus([str(tmp_path / "text")], str(tmp_path / "out"))
    assert [os.path.basename(p) for p in outputs] == ["AA_wiki_00.txt.gz", "AB_wiki_00.txt.gz"]
    assert [gzip.open(p, "rt").read() for p in outputs] == ["First one .\n", "Second one .\n"]
    # the shell's `text/*`: the two subfolders as arguments give the same corpus
    again = prepare_corpus(
        [str(tmp_path / "text" / "AA"), str(tmp_path / "text" / "AB")], str(tmp_path / "o2")
    )
    assert [os.path.basename(p) for p in again] == ["AA_wiki_00.txt.gz", "AB_wiki_00.txt.gz"]
    assert [gzip.open(p, "rt").read() for p in again] == ["First one .\n", "Second one .\n"]


def test_a_real_name_collision_is_refused_before_any_work(tmp_path):
    """`wiki_00` and `wiki_00.gz` of one folder would write one output: refused, naming both."""
    (tmp_path / "AA").mkdir()
    (tmp_path / "AA" / "wiki_00").write_text("<doc id=1>\nT\nOne.\n</doc>\n")
    with gzip.open(tmp_path / "AA" / "wiki_00.gz", "wt") as handle:
        handle.write("<doc id=2>\nT\nTwo.\n</doc>\n")
    with pytest.raises(FormatError, match=r"wiki_00 and .*wiki_00.gz would both write"):
        prepare_corpus([str(tmp_path / "AA")], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
