"""Bad inputs get one line a user can act on, naming the file (and line), and write nothing.

Each case: the input (a file's bytes), what reads it, and the message. The suite grows with every
bad input found (docs: the reliability notes in `docs/design.md`)."""

import gzip

import pytest

from elmo_bilm.files import FormatError
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.tasks.coref.dataset_readers.coref import ElmoCorefReader
from elmo_plugin.tasks.ner.dataset_readers.conll2003 import ElmoConll2003Reader
from elmo_plugin.tasks.snli.dataset_readers.snli import ElmoSnliReader
from elmo_plugin.tasks.squad.dataset_readers.squad import ElmoSquadReader
from elmo_plugin.tasks.srl.dataset_readers.srl import ElmoSrlReader
from elmo_plugin.tasks.sst.dataset_readers.sst import ElmoSstReader

LATIN1 = "caf\xe9".encode("latin-1")  # not UTF-8
CONLL_ROW = b"doc 0 0 word - - - - - - * -"
CONLL_ROW_WITH_ARG = b"doc 0 0 word VB - - - - - * (V*) -"


def read_all(reader, path):
    return list(reader.read(path))


CASES = {
    # undecodable bytes: FILE:LINE, not a bare UnicodeDecodeError at a byte position
    "conll2003 latin-1": (
        lambda p: read_all(ElmoConll2003Reader(), p),
        b"EU NNP I-NP I-ORG\n" + LATIN1 + b" NN I-NP O\n",
        r"in.txt:2: not UTF-8 text",
    ),
    "snli jsonl latin-1": (
        lambda p: read_all(ElmoSnliReader(), p),
        b'{"sentence1": "' + LATIN1 + b'"}\n',
        r"in.txt:1: not UTF-8 text",
    ),
    "squad latin-1": (
        lambda p: read_all(ElmoSquadReader(), p),
        b'{"data": [\n{"title": "' + LATIN1 + b'"}]}',
        r"in.txt:2: not UTF-8 text",
    ),
    "srl latin-1": (
        lambda p: read_all(ElmoSrlReader(), p),
        CONLL_ROW_WITH_ARG.replace(b"word", LATIN1) + b"\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "coref latin-1": (
        lambda p: read_all(ElmoCorefReader(max_span_width=5), p),
        CONLL_ROW.replace(b"word", LATIN1) + b"\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "sst latin-1": (
        lambda p: read_all(ElmoSstReader(), p),
        b"(3 (2 " + LATIN1 + b"))\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "lm conll2003:: latin-1": (
        lambda p: read_all(LmCorpusReader(), f"conll2003::{p}"),
        LATIN1 + b" NN I-NP O\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "lm wikiextractor:: latin-1": (
        lambda p: read_all(LmCorpusReader(), f"wikiextractor::{p}"),
        b"<doc id=1>\nTitle\n" + LATIN1 + b"\n</doc>\n",
        r"in.txt:3: not UTF-8 text",
    ),
    "lm wikiextractor:: truncated gzip": (
        lambda p: read_all(LmCorpusReader(), f"wikiextractor::{p}"),
        gzip.compress(b"<doc id=1>\nTitle\n" + b"Some text here.\n" * 2000 + b"</doc>\n")[:-12],
        r"in.txt:\d+: read failed",
    ),
    # labels and structure
    "sst label 7": (
        lambda p: read_all(ElmoSstReader(), p),
        b"(7 (2 a))\n",
        r"in.txt:1: sentiment label '7'",
    ),
    "coref unclosed mention": (
        lambda p: read_all(ElmoCorefReader(max_span_width=5), p),
        CONLL_ROW.replace(b" -\n", b" (12\n").rstrip(b"-") + b"(12\n",
        r"in.txt:1: mention of cluster 12 opened, never closed",
    ),
    "coref empty file": (
        lambda p: read_all(ElmoCorefReader(max_span_width=5), p),
        b"",
        r"in.txt: no documents",
    ),
    "srl open argument": (
        lambda p: read_all(ElmoSrlReader(), p),
        b"doc 0 0 a NN - - - - - * (ARG0* -\ndoc 0 1 ran VBD - - - - - * (V*) -\n",
        r"in.txt:1: predicate-argument column 12 opens 2 spans and closes 1",
    ),
    "sst empty file": (lambda p: read_all(ElmoSstReader(), p), b"", r"in.txt: no trees"),
    # empty or blank-only training files: not AllenNLP's "no field that needed padding"
    "conll2003 blank file": (
        lambda p: read_all(ElmoConll2003Reader(), p),
        b"\n\n",
        r"in.txt: no sentences",
    ),
    "srl no predicates": (
        lambda p: read_all(ElmoSrlReader(), p),
        b"doc 0 0 a NN - - - - - * -\n",
        r"in.txt: no verbal predicates",
    ),
    "snli empty jsonl": (
        lambda p: read_all(ElmoSnliReader(), p),
        b"",
        r"in.txt: no sentence pairs",
    ),
    # SNLI records AllenNLP answered with AssertionError / TypeError / AttributeError
    "snli label maybe": (
        lambda p: read_all(ElmoSnliReader(), p),
        b'{"sentence1": "a b", "sentence2": "c", "gold_label": "maybe"}\n',
        r"in.txt:1: unknown gold_label 'maybe'",
    ),
    "snli a number": (
        lambda p: read_all(ElmoSnliReader(), p),
        b"42\n",
        r"in.txt:1: expected a JSON object",
    ),
    "snli null sentence": (
        lambda p: read_all(ElmoSnliReader(), p),
        b'{"sentence1": null, "sentence2": "c", "gold_label": "neutral"}\n',
        r"in.txt:1: sentence1 is empty or not a string",
    ),
    "snli empty sentence": (
        lambda p: read_all(ElmoSnliReader(), p),
        b'{"sentence1": " ", "sentence2": "c", "gold_label": "neutral"}\n',
        r"in.txt:1: sentence1 is empty",
    ),
    "snli label missing on one pair": (
        lambda p: read_all(ElmoSnliReader(), p),
        b'{"sentence1": "a", "sentence2": "c", "gold_label": "neutral"}\n{"sentence1": "a", "sentence2": "c"}\n',
        r"in.txt: some pairs have a gold_label and some have none",
    ),
    "squad every answer unmappable": (
        lambda p: read_all(ElmoSquadReader(), p),
        b'{"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "1", "question": "q?", '
        b'"answers": [{"text": "zzz", "answer_start": 0}]}]}]}]}',
        r"in.txt: no question with an answer in its passage \(1 answers unmappable\)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_names_file_and_line(tmp_path, case):
    read, content, message = CASES[case]
    path = tmp_path / "in.txt"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        read(str(path))
