"""Bad inputs get one line a user can act on, naming the file (and line), and write nothing.

Each case: the input (a file's bytes), what reads it, and the message. The suite grows with every
bad input found (docs: the reliability notes in `docs/design.md`)."""

import gzip
import io
import os
import resource
import signal
import subprocess
import sys
import time

import h5py
import pytest
import torch

from elmo_bilm import Elmo, ElmoEmbedder, batch_to_ids, load_bilm_tf
from elmo_bilm.cli.embed import main as embed_main
from elmo_bilm.runtime.engine import embed_file
from elmo_bilm.utils.files import FormatError, numbered_lines
from elmo_plugin.lm.dataset_readers.lm_corpus import LmCorpusReader
from elmo_plugin.tasks.coref.dataset_readers.coref import CorefTaskReader
from elmo_plugin.tasks.ner.dataset_readers.conll2003 import Conll2003TaskReader
from elmo_plugin.tasks.snli.dataset_readers.snli import SnliTaskReader
from elmo_plugin.tasks.squad.dataset_readers.squad import SquadTaskReader
from elmo_plugin.tasks.srl.dataset_readers.srl import SrlTaskReader
from elmo_plugin.tasks.sst.dataset_readers.sst import SstTaskReader
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE

LATIN1 = "caf\xe9".encode("latin-1")  # not UTF-8
CONLL_ROW = b"doc 0 0 word - - - - - - * -"
CONLL_ROW_WITH_ARG = b"doc 0 0 word VB - - - - - * (V*) -"


@pytest.fixture
def bilm_files():
    return ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]


def read_all(reader, path):
    return list(reader.read(path))


CASES = {
    # undecodable bytes: FILE:LINE, not a bare UnicodeDecodeError at a byte position
    "conll2003 latin-1": (
        lambda p: read_all(Conll2003TaskReader(), p),
        b"EU NNP I-NP I-ORG\n" + LATIN1 + b" NN I-NP O\n",
        r"in.txt:2: not UTF-8 text",
    ),
    "snli jsonl latin-1": (
        lambda p: read_all(SnliTaskReader(), p),
        b'{"sentence1": "' + LATIN1 + b'"}\n',
        r"in.txt:1: not UTF-8 text",
    ),
    "squad latin-1": (
        lambda p: read_all(SquadTaskReader(), p),
        b'{"data": [\n{"title": "' + LATIN1 + b'"}]}',
        r"in.txt:2: not UTF-8 text",
    ),
    "srl latin-1": (
        lambda p: read_all(SrlTaskReader(), p),
        CONLL_ROW_WITH_ARG.replace(b"word", LATIN1) + b"\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "coref latin-1": (
        lambda p: read_all(CorefTaskReader(max_span_width=5), p),
        CONLL_ROW.replace(b"word", LATIN1) + b"\n",
        r"in.txt:1: not UTF-8 text",
    ),
    "sst latin-1": (
        lambda p: read_all(SstTaskReader(), p),
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
        lambda p: read_all(SstTaskReader(), p),
        b"(7 (2 a))\n",
        r"in.txt:1: sentiment label '7'",
    ),
    "coref unclosed mention": (
        lambda p: read_all(CorefTaskReader(max_span_width=5), p),
        CONLL_ROW.replace(b" -\n", b" (12\n").rstrip(b"-") + b"(12\n",
        r"in.txt:1: mention of cluster 12 opened, never closed",
    ),
    "coref empty file": (
        lambda p: read_all(CorefTaskReader(max_span_width=5), p),
        b"",
        r"in.txt: no documents",
    ),
    "srl open argument": (
        lambda p: read_all(SrlTaskReader(), p),
        b"doc 0 0 a NN - - - - - * (ARG0* -\ndoc 0 1 ran VBD - - - - - * (V*) -\n",
        r"in.txt:1: predicate-argument column 12 opens 2 spans and closes 1",
    ),
    "sst empty file": (lambda p: read_all(SstTaskReader(), p), b"", r"in.txt: no trees"),
    # empty or blank-only training files: not AllenNLP's "no field that needed padding"
    "conll2003 blank file": (
        lambda p: read_all(Conll2003TaskReader(), p),
        b"\n\n",
        r"in.txt: no sentences",
    ),
    "srl no predicates": (
        lambda p: read_all(SrlTaskReader(), p),
        b"doc 0 0 a NN - - - - - * -\n",
        r"in.txt: no verbal predicates",
    ),
    "snli empty jsonl": (
        lambda p: read_all(SnliTaskReader(), p),
        b"",
        r"in.txt: no sentence pairs",
    ),
    # SNLI records AllenNLP answered with AssertionError / TypeError / AttributeError
    "snli label maybe": (
        lambda p: read_all(SnliTaskReader(), p),
        b'{"sentence1": "a b", "sentence2": "c", "gold_label": "maybe"}\n',
        r"in.txt:1: unknown gold_label 'maybe'",
    ),
    "snli a number": (
        lambda p: read_all(SnliTaskReader(), p),
        b"42\n",
        r"in.txt:1: expected a JSON object",
    ),
    "snli null sentence": (
        lambda p: read_all(SnliTaskReader(), p),
        b'{"sentence1": null, "sentence2": "c", "gold_label": "neutral"}\n',
        r"in.txt:1: sentence1 is empty or not a string",
    ),
    "snli empty sentence": (
        lambda p: read_all(SnliTaskReader(), p),
        b'{"sentence1": " ", "sentence2": "c", "gold_label": "neutral"}\n',
        r"in.txt:1: sentence1 is empty",
    ),
    "snli label missing on one pair": (
        lambda p: read_all(SnliTaskReader(), p),
        b'{"sentence1": "a", "sentence2": "c", "gold_label": "neutral"}\n{"sentence1": "a", "sentence2": "c"}\n',
        r"in.txt: some pairs have a gold_label and some have none",
    ),
    "squad every answer unmappable": (
        lambda p: read_all(SquadTaskReader(), p),
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


# --- the second sweep (issue 40): lost output, silent wrong results, unclear errors -------------

ELMO_EMBED = os.path.join(os.path.dirname(sys.executable), "elmo-embed")


def _sentences(path, count):
    path.write_text(
        "".join(f"the cat number {i} sat on the mat , then slept .\n" for i in range(count))
    )
    return str(path)


def _wait_for_partial(folder, process, timeout=60.0):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        found = list(folder.glob("*.partial"))
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()[1][-2000:]
        time.sleep(0.05)
    raise AssertionError("no partial file appeared")


def test_sigterm_removes_the_partial_file_and_ends_with_its_status(tmp_path):
    """Item 2: `kill` / `timeout` / a scheduler's SIGTERM cleans up as Ctrl-C does."""
    source = _sentences(tmp_path / "in.txt", 4000)  # the shipped biLM: several seconds of work
    process = subprocess.Popen(
        [ELMO_EMBED, source, str(tmp_path / "out.hdf5")], stderr=subprocess.PIPE, text=True
    )
    _wait_for_partial(tmp_path, process)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert not list(tmp_path.glob("out.hdf5*"))


def test_a_second_writer_is_refused_and_the_first_finishes(tmp_path, capsys):
    """Item 3: the second run onto one output no longer deletes the first one's partial file."""
    source = _sentences(tmp_path / "in.txt", 3000)
    output = tmp_path / "out.hdf5"
    first = subprocess.Popen([ELMO_EMBED, source, str(output)], stderr=subprocess.PIPE, text=True)
    partial = _wait_for_partial(tmp_path, first)
    assert embed_main([source, str(output)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"is being written by process {first.pid}" in err and partial.exists()
    assert first.wait(timeout=300) == 0, first.communicate()[1][-2000:]
    with h5py.File(output, "r") as out:
        assert len(out.keys()) == 3001  # every line and sentence_to_index
    assert not list(tmp_path.glob("*.partial"))


def test_a_dead_writers_partial_file_is_cleared(tmp_path, bilm_files):
    """A partial file whose process died (SIGKILL leaves it) does not block the next run."""
    source = _sentences(tmp_path / "in.txt", 2)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"out.hdf5.{dead.pid}.partial"
    stale.write_bytes(b"half")
    assert embed_main([source, str(tmp_path / "out.hdf5"), *bilm_files]) == 0
    assert not stale.exists() and (tmp_path / "out.hdf5").is_file()


def _limit_file_size(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_disk_that_fills_midway_is_one_line_and_leaves_nothing(tmp_path, bilm_files):
    """Item 1: a write that fails (here a file-size limit: EFBIG, as ENOSPC on a full disk) ends
    `elmo-embed` with one line naming the output; HDF5 writing to the path itself crashed
    (segmentation fault, thousands of "Exception ignored" lines)."""
    source = _sentences(tmp_path / "in.txt", 500)
    result = subprocess.run(
        [ELMO_EMBED, source, str(tmp_path / "out.hdf5"), *bilm_files],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(64 * 1024),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "out.hdf5: File too large; nothing was written" in errors[0]
    assert "Exception ignored" not in result.stderr
    assert not list(tmp_path.glob("out.hdf5*"))


def test_an_output_the_disk_cannot_hold_is_refused_up_front(tmp_path, monkeypatch, bilm_files):
    import shutil

    source = _sentences(tmp_path / "in.txt", 50)
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(1, 1, 1000))
    with pytest.raises(OSError, match=r"out.hdf5: needs about .* MB, .* has 0.0 MB free"):
        embed_file(load_bilm_tf(*bilm_files[1::2]), source, str(tmp_path / "out.hdf5"))
    assert not list(tmp_path.glob("out.hdf5*"))


@pytest.mark.parametrize(
    "content, lines",
    [
        (b"a b\rc d\re\r", ["a b", "c d", "e"]),  # CR-only line ends (old Mac, some exports)
        (b"a b\r\nc d\r\n", ["a b", "c d"]),
        (b"\xef\xbb\xbfa b\nc\n", ["a b", "c"]),  # a UTF-8 byte-order mark is no token
        (b"a\n\nb", ["a", "", "b"]),
        (b"a\r", ["a"]),
    ],
)
def test_text_is_read_as_users_tools_read_it(tmp_path, content, lines):
    """Item 5: universal newlines and no byte-order mark, in every reader (one function)."""
    (tmp_path / "in.txt").write_bytes(content)
    assert [line for _, line in numbered_lines(tmp_path / "in.txt")] == lines
    (tmp_path / "big.txt").write_bytes(b"x\r" * 700_000)  # CRs across read chunks
    assert sum(1 for _ in numbered_lines(tmp_path / "big.txt")) == 700_000


def test_a_crlf_split_across_read_chunks_is_one_line_end(tmp_path):
    from elmo_bilm.utils.files import raw_lines

    data = b"ab\r\ncd\ref\ngh"
    lines = list(raw_lines(io.BytesIO(data), chunk_size=3))
    assert lines == [(0, b"ab"), (4, b"cd"), (7, b"ef"), (10, b"gh")]
    assert all(data[at : at + len(line)] == line for at, line in lines)  # the offsets seek


def test_the_word_cache_sees_edits_through_data():
    """Item 7: weights edited in place through `.data` (no autograd version bump) empty the cache."""
    bilm = load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()
    ids = batch_to_ids([["a", "cat", "sat"]])
    with torch.no_grad():
        before = bilm(ids)["token"]
        bilm.char_cnn.projection.weight.data.mul_(2.0)
        after = bilm(ids)["token"]
        bilm.char_cnn.word_cache_size = 0
        uncached = bilm(ids)["token"]
    assert not torch.equal(before, after) and torch.equal(after, uncached)


def test_a_bilm_vocab_without_sentence_boundaries_is_refused(tmp_path):
    """Item 8: a vocab without <S> / </S> trained without them and exported <UNK>'s row."""
    from elmo_plugin.lm.vocabulary import BilmTfVocabulary

    (tmp_path / "vocab.txt").write_text("<UNK>\nthe\ncat\n")
    with pytest.raises(FormatError, match=r"vocab.txt: no <S> and no </S> line; a bilm-tf"):
        BilmTfVocabulary.from_bilm_tf_vocab(str(tmp_path / "vocab.txt"))
    (tmp_path / "late.txt").write_text("the\ncat\n<S>\n</S>\n")
    with pytest.raises(FormatError, match=r"no <S> and no </S> line within max_size 2"):
        BilmTfVocabulary.from_bilm_tf_vocab(str(tmp_path / "late.txt"), max_size=2)


@pytest.mark.parametrize("sentence", [[1, 2], [["nested"]]])
def test_a_sentence_that_is_not_a_token_list_is_refused(sentence):
    """`embed_sentence([1, 2])`: a bare error before. (A string is read as AllenNLP reads it, a
    sequence of one-character tokens: tests/elmo_bilm/model/test_strings_as_tokens.py.)"""
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    with pytest.raises(TypeError):
        embedder.embed_sentence(sentence)
    with pytest.raises(TypeError):
        batch_to_ids([sentence])


def test_empty_batches_give_empty_outputs():
    """`Elmo` on zero sentences: empty tensors of the right widths, not a stack error."""
    elmo = Elmo(str(OPTIONS_FILE), str(WEIGHT_FILE), 2, dropout=0.0)
    for ids in (batch_to_ids([]), torch.zeros((0, 4, 50), dtype=torch.long)):
        output = elmo(ids)
        assert [r.shape for r in output["elmo_representations"]] == [(0, ids.shape[1], 32)] * 2
        assert output["mask"].shape == (0, ids.shape[1])
    embedder = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE))
    assert embedder.embed_batch([]) == [] and embedder.batch_to_embeddings([])[0].shape[0] == 0


def test_a_missing_or_truncated_elmo_options_file_is_named_at_config_load(tmp_path, repo_root):
    """`ELMO_OPTIONS_FILE=/nope`: jsonnet said "undefined external variable: ELMO_PROJECTION_DIM";
    a truncated file broke every `allennlp` command at plugin import with a bare JSONDecodeError."""
    (tmp_path / "cut.json").write_text(OPTIONS_FILE.read_text()[:30])
    config = str(repo_root / "training_config" / "snli_esim_elmo.jsonnet")
    code = (
        "import elmo_plugin\n"  # importing succeeds whatever the file holds
        "from allennlp.common import Params\n"
        f"Params.from_file({config!r})\n"
    )
    for value, message in (
        (tmp_path / "nope.json", "no such file"),
        (tmp_path / "cut.json", ":3: not valid JSON"),
    ):
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "ELMO_OPTIONS_FILE": str(value)},
        )
        last = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 1 and f"ELMO_OPTIONS_FILE: {value}" in last, result.stderr[
            -1500:
        ]
        assert message in last


def test_a_truncated_archive_is_named_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tarfile
    import tempfile

    from elmo_plugin.modules.bilm_loading import load_bilm_or_archive

    (tmp_path / "config.json").write_text("{}")
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "config.json", arcname="config.json")
        archive.add(WEIGHT_FILE, arcname="weights.th")
    data = (tmp_path / "model.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) // 2])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(FormatError, match=r"cut.tar.gz: not a readable model.tar.gz \(truncated"):
        load_bilm_or_archive(archive_file=str(tmp_path / "cut.tar.gz"))
    assert not list(scratch.iterdir())


def test_a_checkpoint_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    """Full disk in `allennlp train`: torch's "enforce fail at inline_container.cc ... unexpected
    pos" becomes one line naming the folder and its free space."""
    from allennlp.training.checkpointer import Checkpointer

    from elmo_plugin.training.safe_checkpointer import SafeCheckpointer

    def fail(self, trainer):
        raise RuntimeError(
            "[enforce fail at inline_container.cc:659] . unexpected pos 4352 vs 4244\nmore"
        )

    monkeypatch.setattr(Checkpointer, "save_checkpoint", fail)
    with pytest.raises(OSError, match=r"writing a checkpoint failed \(.* MB free; full disk\?\)"):
        SafeCheckpointer(str(tmp_path)).save_checkpoint(None)


@pytest.mark.parametrize("command", ["elmo-prepare-corpus", "elmo-vocab", "elmo-word-vectors"])
def test_an_unwritable_output_place_is_one_line(tmp_path, command):
    """Read-only or impossible output places: one line, exit status 1, no traceback (a path
    under a plain file stands in for a read-only folder, which root could write)."""
    from tests.elmo_plugin.commands.test_elmo_embed import allennlp

    (tmp_path / "wiki_00").write_text("<doc id=1>\nT\nSome text .\n</doc>\n")
    (tmp_path / "file").write_text("not a folder")
    inputs = {
        "elmo-prepare-corpus": [tmp_path / "wiki_00", tmp_path / "file" / "out"],
        "elmo-vocab": [f"wikiextractor::{tmp_path / 'wiki_00'}", tmp_path / "file" / "v.txt"],
        "elmo-word-vectors": [tmp_path / "wiki_00", tmp_path / "file" / "v.txt.gz"],
    }[command]
    result = allennlp(command, *inputs, cwd=REPO_ROOT)
    assert result.returncode == 1, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last.startswith(f"{command}: error:")
        and "file" in last
        and "Traceback" not in result.stderr
    )


def test_prepare_corpus_on_a_full_disk_is_one_line(tmp_path):
    """`elmo-prepare-corpus` onto a full disk (a file-size limit: EFBIG, as ENOSPC) was a
    traceback; now one line naming the shard, and no partial file left."""
    from tests.elmo_plugin.commands.test_elmo_embed import allennlp

    words = " ".join(f"w{i * 7919 % 100003}" for i in range(60_000))  # gzip cannot shrink it much
    text = f"<doc id=1>\nT\n{words} .\n</doc>\n"
    (tmp_path / "wiki_00").write_text(text)
    result = allennlp(
        "elmo-prepare-corpus",
        tmp_path / "wiki_00",
        tmp_path / "out",
        cwd=REPO_ROOT,
        preexec_fn=_limit_file_size(8 * 1024),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("elmo-prepare-corpus: error:") and "wiki_00.txt.gz: File too large" in last
    )
    assert "Traceback" not in result.stderr and not list((tmp_path / "out").glob("*"))
