"""Planning a corpus run: the input files (local paths, folders, globs, or URIs pyarrow opens),
their shards of lines as byte ranges with every line checked, the shard size that gives each
worker work, and a shard's sentences as a worker reads them."""

import dataclasses
import gzip
import io
import os
from typing import Any, BinaryIO, Dict, Iterator, List, Sequence, Tuple

from elmo_bilm.formats.parquet import require_pyarrow
from elmo_bilm.runtime.engine import line_words
from elmo_bilm.utils.files import FormatError, decode_line, expand_paths, raw_lines


@dataclasses.dataclass
class Shard:
    """`lines` lines of `file` from `first_line` (1-based): bytes `start` to `end` (`end` -1:
    to the end of the file; `start` -1: a gzip file, read from its start); `skipped`: the bad
    lines left out (`--skip-bad-lines`); `tokens`: the tokens of the rest; `path`: where the
    workers open `file` (absolute, or the URI)."""

    name: str
    file: str
    first_line: int
    lines: int = 0
    start: int = 0
    end: int = -1
    skipped: List[int] = dataclasses.field(default_factory=list)
    tokens: int = 0
    path: str = ""


def location(file: str) -> str:
    """`file` as every worker opens it: a URI as it is, a local path made absolute."""
    return file if "://" in file else os.path.abspath(file)


def filesystem(path: str) -> Tuple[Any, str]:
    """The pyarrow file system of `path` (a local path, or a URI pyarrow opens: s3://, gs://,
    hdfs://, file://) and the path on it."""
    require_pyarrow()
    import pyarrow.fs as pafs

    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def input_files(inputs: Sequence[str]) -> List[str]:
    """Files, folders (their visible files) and globs, in the order given, each sorted."""
    import pyarrow.fs as pafs

    files: List[str] = []
    for spec in inputs:
        if "://" not in spec:
            files += expand_paths(spec)
            continue
        fs, path = filesystem(spec)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            scheme = spec.split("://", 1)[0]
            listed = fs.get_file_info(pafs.FileSelector(path))
            files += sorted(
                f"{scheme}://{item.path}"
                for item in listed
                if item.type == pafs.FileType.File and not item.base_name.startswith(".")
            )
        else:
            files.append(spec)
    return files


def _open(path: str) -> BinaryIO:
    fs, location = filesystem(path)
    try:
        return fs.open_input_file(location)
    except (OSError, FileNotFoundError) as error:
        raise FormatError(f"{path}: cannot read ({error})") from error


def _shard_prefix(file: str, files: Sequence[str]) -> str:
    """A shard's name stem: the file's path below the inputs' common folder, '/' -> '__'."""
    paths = [f.split("://", 1)[-1] for f in files]
    common = os.path.commonpath([os.path.dirname(p) for p in paths]) if len(paths) > 1 else None
    path = file.split("://", 1)[-1]
    relative = os.path.relpath(path, common) if common else os.path.basename(path)
    return relative.replace(os.sep, "__")


def _check(file: str, number: int, raw: bytes) -> List[str]:
    """The tokens of line `number`; a bad line is a `FormatError` naming FILE:LINE."""
    return line_words(file, number, decode_line(file, number, raw))


def _lines(handle: BinaryIO) -> Iterator[Tuple[int, bytes]]:
    """`(byte offset, line)`; a gzip file's lines have offset -1 (it cannot be seeked into)."""
    gzipped = handle.read(2) == b"\x1f\x8b"
    handle.seek(0)
    if gzipped:
        for _, raw in raw_lines(gzip.GzipFile(fileobj=handle)):  # type: ignore[arg-type]
            yield -1, raw
    else:
        yield from raw_lines(handle)


def plan(
    inputs: Sequence[str], shard_lines: int, skip_bad_lines: bool = False
) -> Tuple[List[Shard], int]:
    """The shards of `inputs` and the number of bad lines skipped; every line checked (without
    `skip_bad_lines`, the first bad one is a `FormatError` naming FILE:LINE)."""
    files = input_files(inputs)
    shards: List[Shard] = []
    skipped = 0
    for file in files:
        prefix = _shard_prefix(file, files)
        with _open(file) as handle:
            count = 0
            for count, (offset, raw) in enumerate(_lines(handle), start=1):
                if (count - 1) % shard_lines == 0:
                    if shards and shards[-1].file == file and offset >= 0:
                        shards[-1].end = offset
                    index = (count - 1) // shard_lines
                    name = f"{prefix}-{index:05d}"
                    shards.append(Shard(name, file, count, start=offset, path=location(file)))
                shard = shards[-1]
                shard.lines += 1
                try:
                    words = _check(file, count, raw)
                except FormatError:
                    if not skip_bad_lines:
                        raise
                    shard.skipped.append(count)
                    skipped += 1
                    continue
                shard.tokens += len(words)
            if count == 0:
                raise FormatError(f"{file}: no sentences")
    return shards, skipped


def lines_for_workers(shards: Sequence[Shard], shard_lines: int, num_workers: int) -> int:
    """The largest shard size up to `shard_lines` that gives each of `num_workers` workers a
    shard of the planned lines (each file is sharded on its own); 1 with fewer lines than
    workers."""
    per_file: Dict[str, int] = {}
    for shard in shards:
        per_file[shard.file] = per_file.get(shard.file, 0) + shard.lines
    size = max(1, min(shard_lines, sum(per_file.values()) // num_workers))
    while size > 1 and sum(-(-lines // size) for lines in per_file.values()) < num_workers:
        size -= 1
    return size


def shard_sentences(shard: Shard) -> Iterator[Tuple[int, List[str]]]:
    """`(line number, tokens)` of the shard's lines, bad ones left out."""
    skipped = set(shard.skipped)
    with _open(shard.path or shard.file) as handle:
        if shard.start >= 0:
            handle.seek(shard.start)
            data = handle.read(shard.end - shard.start) if shard.end >= 0 else handle.read()
            lines: Iterator[Tuple[int, bytes]] = raw_lines(io.BytesIO(data))
            first = shard.first_line
        else:
            lines = _lines(handle)
            first = 1
        for number, (_, raw) in enumerate(lines, start=first):
            if number >= shard.first_line + shard.lines:
                break
            if number < shard.first_line or number in skipped:
                continue
            yield number, _check(shard.file, number, raw)
