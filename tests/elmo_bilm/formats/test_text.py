"""Text input (`elmo_bilm.formats.text`): a pipe, `/dev/stdin` or `<(...)` is read once as a
stream (gzip too), and the file objects AllenNLP 0.9's `embed_file` took (text, binary, a
descriptor) read as the same lines, errors naming FILE:LINE."""

import gzip
import io
import os
import threading

import pytest

from elmo_bilm.formats.fasta import read_fasta
from elmo_bilm.formats.text import is_stream, sentence_lines, source_name
from elmo_bilm.utils.errors import FormatError

LINES = b"The cat sat .\nA dog\r\n"
WANTED = [(1, "The cat sat .", ["The", "cat", "sat", "."]), (2, "A dog", ["A", "dog"])]


def fifo_with(tmp_path, data: bytes) -> str:
    """A FIFO in `tmp_path` that a thread fills with `data` once it is opened."""
    path = str(tmp_path / "pipe")
    os.mkfifo(path)

    def fill() -> None:
        with open(path, "wb") as writer:
            writer.write(data)

    threading.Thread(target=fill, daemon=True).start()
    return path


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_pipe_is_read_once_as_a_stream(tmp_path, gzipped) -> None:
    path = fifo_with(tmp_path, gzip.compress(LINES) if gzipped else LINES)
    assert is_stream(path) and not is_stream(__file__)
    assert list(sentence_lines(path)) == WANTED


def test_a_fasta_on_a_pipe_is_read(tmp_path) -> None:
    path = fifo_with(tmp_path, b">p1 a protein\nMKV\nLL\n>p2\nA\n")
    assert list(read_fasta(path)) == [(0, "p1", list("MKVLL")), (1, "p2", ["A"])]


def test_file_objects_read_as_the_path_does(tmp_path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(LINES)
    assert list(sentence_lines(io.StringIO(LINES.decode()))) == WANTED
    with open(path, encoding="utf-8") as text:
        assert list(sentence_lines(text)) == WANTED
    with os.fdopen(os.open(path, os.O_RDONLY), "rb") as binary:
        assert list(sentence_lines(binary)) == WANTED
    assert list(sentence_lines(io.BytesIO(LINES))) == WANTED


def test_a_file_objects_bad_line_names_it() -> None:
    with pytest.raises(FormatError, match=r"^<stream>:2: empty line"):
        list(sentence_lines(io.StringIO("a b\n \n")))
    with pytest.raises(FormatError, match=r"^<stream>:2: not UTF-8"):
        list(sentence_lines(io.BytesIO(b"a\n\xff\n")))
    with open(os.devnull, "rb") as handle, os.fdopen(os.dup(handle.fileno()), "rb") as by_number:
        assert source_name(handle) == os.devnull
        assert source_name(by_number) == f"<fd {by_number.fileno()}>"
