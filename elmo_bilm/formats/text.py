"""Text input: one whitespace-tokenised sentence per line, UTF-8 (possibly gzip), read from a
path, a pipe or `/dev/stdin` (a stream, read once), or an open file object (text or binary, as
AllenNLP 0.9's `ElmoEmbedder.embed_file` took). Lines are split as Python's text mode splits
them; an empty or non-UTF-8 line is an error naming FILE:LINE."""

import os
import stat
import sys
from typing import IO, Any, Iterator, List, Optional, Tuple, Union

from elmo_bilm.utils.errors import FormatError, UsageError
from elmo_bilm.utils.files import decode_line, open_bytes, raw_lines

# What an input names: a path (a regular file or a stream such as `<(zcat corpus.gz)`) or an
# open file object.
Source = Union[str, "os.PathLike[str]", IO[Any]]
# One input item: (0-based index (the line number - 1, or a FASTA record's), its name (the
# stripped line or the record's id), its tokens).
Item = Tuple[int, str, List[str]]


def is_file_object(source: Source) -> bool:
    """Whether `source` is an open file object (not a path)."""
    return hasattr(source, "read")


def source_name(source: Source) -> str:
    """The name errors give `source`: its path, a file object's `name`, or `<stream>`."""
    if not is_file_object(source):
        return os.fspath(source)  # type: ignore[arg-type]
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>" if name is None else f"<fd {name}>"


def is_stream(source: Source) -> bool:
    """Whether `source` can be read only once: a file object, or a path that is not a regular
    file (a pipe, `/dev/stdin`, `<(...)`); such an input is checked as it is read, not before."""
    if is_file_object(source):
        return True
    try:
        return not stat.S_ISREG(os.stat(source).st_mode)  # type: ignore[arg-type]
    except OSError:
        return False


def check_input(source: Source) -> None:
    """Before any work: a path names something readable as text (a file or a stream), not a
    folder; a file object must be open for reading."""
    if is_file_object(source):
        handle: Any = source
        if getattr(handle, "closed", False):
            raise UsageError(f"{source_name(source)}: the file object is closed; pass an open one")
        if hasattr(handle, "readable") and not handle.readable():
            raise UsageError(
                f"{source_name(source)}: not open for reading; open it with 'r' or 'rb'"
            )
        return
    path = os.fspath(source)  # type: ignore[arg-type]
    if os.path.isdir(path):
        raise UsageError(f"{path}: a folder; name the text file to read")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")


def line_words(input_file: str, line_number: int, line: str) -> List[str]:
    """The tokens of one input line; an empty line is an error naming FILE:LINE and the flag that
    leaves such lines out (`elmo-embed` and `elmo-embed-corpus` take one whitespace-tokenised
    sentence per line)."""
    words = line.split()
    if not words:
        raise FormatError(
            f"{input_file}:{line_number}: empty line; one whitespace-tokenised sentence per line "
            "(--skip-bad-lines leaves empty and non-UTF-8 lines out)"
        )
    return words


def _raw_lines(source: Source) -> Iterator[Tuple[int, Union[bytes, str]]]:
    """`(line number, line without its end)`: bytes from a path or a binary file object, text
    from a text file object."""
    if not is_file_object(source):
        with open_bytes(source) as opened:  # type: ignore[arg-type]
            for number, (_, raw) in enumerate(raw_lines(opened), start=1):
                yield number, raw
        return
    handle: Any = source
    if "b" in str(getattr(handle, "mode", "")):  # a binary file: lines split as text mode would
        yield from ((n, raw) for n, (_, raw) in enumerate(raw_lines(handle), start=1))
        return
    for number, line in enumerate(handle, start=1):  # `io.StringIO` keeps a CRLF's CR
        end = "\r\n" if line.endswith("\r\n" if isinstance(line, str) else b"\r\n") else "\n"
        if line.endswith(end if isinstance(line, str) else end.encode()):
            line = line[: -len(end)]
        yield number, line


def numbered_text(source: Source) -> Iterator[Tuple[int, str]]:
    """`(line number, text)` of every line of `source`; a non-UTF-8 line or a failed read is a
    `FormatError` naming FILE:LINE."""
    name, line_number = source_name(source), 0
    try:
        for line_number, raw in _raw_lines(source):
            yield (
                line_number,
                decode_line(name, line_number, raw) if isinstance(raw, bytes) else raw,
            )
    except (OSError, EOFError, UnicodeDecodeError) as error:  # a text file object decodes
        raise FormatError(f"{name}:{line_number + 1}: read failed ({error})") from error


def sentence_lines(
    input_file: Source, skip_bad_lines: bool = False, skipped: Optional[List[int]] = None
) -> Iterator[Tuple[int, str, List[str]]]:
    """`(line number, line, tokens)` of every line of `input_file`, numbered from 1; an empty or
    non-UTF-8 line is a `FormatError` naming FILE:LINE, or with `skip_bad_lines` left out, its
    number appended to `skipped`."""
    name, line_number = source_name(input_file), 0
    try:
        for line_number, raw in _raw_lines(input_file):
            try:
                line = decode_line(name, line_number, raw) if isinstance(raw, bytes) else raw
                words = line_words(name, line_number, line)
            except FormatError:
                if not skip_bad_lines:
                    raise
                if skipped is not None:
                    skipped.append(line_number)
                continue
            yield line_number, line, words
    except (OSError, EOFError, UnicodeDecodeError) as error:  # a text file object decodes
        raise FormatError(f"{name}:{line_number + 1}: read failed ({error})") from error


def count_sentences(
    input_file: Source, skip_bad_lines: bool = False, skipped: Optional[List[int]] = None
) -> Tuple[int, int]:
    """Check every line (an empty or non-UTF-8 one is an error naming FILE:LINE, unless
    `skip_bad_lines`: then it is left out, its number appended to `skipped`) and count the
    sentences and their tokens."""
    sentences = tokens = 0
    for _, _, words in sentence_lines(input_file, skip_bad_lines, skipped):
        sentences += 1
        tokens += len(words)
    if sentences == 0:
        raise FormatError(f"{source_name(input_file)}: no sentences")
    return sentences, tokens


def read_chunks(
    input_file: Source,
    chunk_size: int,
    skip_bad_lines: bool = False,
    skipped: Optional[List[int]] = None,
) -> Iterator[List[Item]]:
    """`(index, stripped line, tokens)` of the input's sentences, `chunk_size` at a time, in file
    order; the index is the 0-based line number (a skipped line's is not used)."""
    chunk: List[Item] = []
    for line_number, line, words in sentence_lines(input_file, skip_bad_lines, skipped):
        chunk.append((line_number - 1, line.strip(), words))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def report_skipped(input_name: str, skipped: List[int]) -> None:
    """Say on stderr which lines `skip_bad_lines` left out (the first five, FILE:LINE)."""
    if skipped:
        shown = ", ".join(f"{input_name}:{number}" for number in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        print(
            f"elmo-embed: leaving out {len(skipped)} empty or non-UTF-8 line(s): {shown}{more}",
            file=sys.stderr,
        )
