"""`elmo-embed-corpus`: ELMo vectors for a corpus of text files, spread over Ray Data actors (one
biLM each; local Ray by default, any Ray cluster by `--address`), written as Parquet shards
(`elmo_bilm.formats.parquet`). Needs `pip install "elmo-bilm[ray]"`.

The driver reads the inputs once to plan shards of `--shard-lines` lines (byte ranges, so a
worker seeks straight to its lines) and to check every line: an empty or non-UTF-8 line is one
error naming FILE:LINE before any work, or with `--skip-bad-lines` skipped and counted. Each
shard is one Parquet file, written to a partial file and moved into place when complete, so a
re-run embeds only the shards that are missing or truncated (each kept shard's footer and row
count checked). `_manifest.json` records what the shards are computed from (the biLM's SHA-256,
each input's absolute path, size and SHA-256, the options that change the vectors): a re-run
that differs is refused, naming what changed; `--overwrite` starts over.
A corpus too small to give every worker a shard is cut into smaller shards (one line says so).
Ray restarts a worker that dies and retries its shard. A worker holds its shard's text and one
batch of vectors: memory is bounded by `--batch-size` and `--max-tokens`, not by the corpus.
"""

import argparse
import dataclasses
import gzip
import io
import json
import logging
import os
import resource
import sys
import time
import uuid
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch
from tqdm import tqdm

from elmo_bilm.cli.arguments import add_batch_arguments, add_bilm_arguments
from elmo_bilm.cli.embed import add_layer_arguments, layers_of
from elmo_bilm.formats.parquet import DTYPES, EmbeddingWriter, import_extra, require_pyarrow
from elmo_bilm.integrations.ray_noise import filtered_stderr
from elmo_bilm.runtime.engine import (
    BULK_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    Layers,
    embed_sorted,
    line_words,
)
from elmo_bilm.runtime.precision import add_precision_argument, set_precision
from elmo_bilm.sources.resolver import load_bilm, resolve_bilm
from elmo_bilm.utils.files import (
    FormatError,
    UsageError,
    decode_line,
    expand_paths,
    raw_lines,
    reports_errors,
    sha256_files,
)

logger = logging.getLogger(__name__)

MANIFEST = "_manifest.json"
SUMMARY = "_summary.json"


def require_ray() -> Any:
    """`ray` with Ray Data."""
    import_extra("ray.data", "elmo-embed-corpus needs Ray Data")
    return import_extra("ray", "elmo-embed-corpus needs Ray Data")


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


class ShardEmbedder:
    """A Ray Data actor: one biLM, embedding whole shards into Parquet files under
    `output_dir` (a partial file, moved into place when complete)."""

    def __init__(
        self,
        options_file: Optional[str],
        weight_file: Optional[str],
        layers: Dict[str, Any],
        dtype: str,
        batch_size: int,
        output_dir: str,
        threads: int,
        precision: str = "float32",
        max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
    ) -> None:
        torch.set_num_threads(threads)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.bilm = load_bilm(options_file, weight_file).to(self.device).eval()
        set_precision(self.bilm, precision)
        self.layers = Layers(**layers)
        self.depth = self.layers.depth(self.bilm.num_layers)
        self.dtype, self.batch_size, self.max_tokens = dtype, batch_size, max_tokens
        self.fs, self.root = filesystem(output_dir)

    def __call__(self, batch: Dict[str, numpy.ndarray]) -> Dict[str, numpy.ndarray]:
        results = [self.embed(Shard(**json.loads(text))) for text in batch["shard"]]
        return {key: numpy.array([result[key] for result in results]) for key in results[0]}

    def embed(self, shard: Shard) -> Dict[str, Any]:
        started = time.perf_counter()
        sentences = list(shard_sentences(shard))
        final = f"{self.root}/{shard.name}.parquet"
        partial = f"{final}.{uuid.uuid4().hex}.partial"
        try:
            with self.fs.open_output_stream(partial) as out:
                writer = EmbeddingWriter(
                    out,
                    self.layers.name,
                    self.depth,
                    self.bilm.get_output_dim(),
                    self.dtype,
                    metadata=self.layers.metadata,
                )
                for batch, host in embed_sorted(
                    self.bilm,
                    sentences,
                    _words,
                    self.batch_size,
                    self.device,
                    self.layers,
                    self.max_tokens,
                ):
                    words = [tokens for _, tokens in batch]
                    writer.write([shard.file] * len(batch), [n for n, _ in batch], words, host)
                writer.close()
            self.fs.move(partial, final)
        except BaseException:
            try:
                self.fs.delete_file(partial)
            except OSError:
                pass
            raise
        return {
            "shard": shard.name,
            "sentences": len(sentences),
            "seconds": time.perf_counter() - started,
            "pid": os.getpid(),
            # ru_maxrss is KiB on Linux
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def _words(item: Tuple[int, List[str]]) -> List[str]:
    return item[1]


def bilm_sha256(options_file: Optional[str], weight_file: Optional[str]) -> str:
    """The identity of the biLM the options name: the SHA-256 of its files
    (`elmo_bilm.sources.resolver.ResolvedBilm.identity`)."""
    return resolve_bilm(options_file, weight_file).identity()


def input_record(file: str) -> Dict[str, Any]:
    """What identifies an input: its absolute path (or URI), size and SHA-256."""
    fs, path = filesystem(file)
    size = fs.get_file_info(path).size
    return {
        "path": location(file),
        "size": size,
        "sha256": sha256_files([path], fs.open_input_stream),
    }


def _manifest(arguments: Dict[str, Any], shards: Sequence[Shard]) -> Dict[str, Any]:
    return {
        **arguments,
        "shards": [[s.name, s.file, s.first_line, s.lines, s.skipped] for s in shards],
    }


def _read_manifest(fs: Any, root: str) -> Optional[Dict[str, Any]]:
    """The manifest an earlier run left in `root`, or None."""
    try:
        with fs.open_input_stream(f"{root}/{MANIFEST}") as handle:
            manifest: Dict[str, Any] = json.loads(handle.read().decode("utf-8"))
            return manifest
    except FileNotFoundError:
        return None


def _shard_size(
    fs: Any, root: str, shards: Sequence[Shard], shard_lines: int, num_workers: int
) -> int:
    """Lines per shard: an earlier run's in this folder (a resume keeps its shards, whatever the
    worker count), else `shard_lines`, or fewer when that leaves a worker without a shard."""
    previous = _read_manifest(fs, root)
    if previous is not None and previous.get("shard_lines") == shard_lines:
        return int(previous.get("lines_per_shard", shard_lines))
    if len(shards) >= num_workers:
        return shard_lines
    return lines_for_workers(shards, shard_lines, num_workers)


# recorded for the reader, not compared: the same biLM by another path is the same biLM
INFORMATIONAL = ("options_file", "weight_file")


def _inputs_changed(previous: List[Dict[str, Any]], current: List[Dict[str, Any]]) -> str:
    """The first difference between two runs' input records, in words."""
    before = {record["path"]: record for record in previous}
    for record in current:
        old = before.get(record["path"])
        if old is None:
            return f"{record['path']} is not among the earlier run's"
        if old != record:
            return (
                f"{record['path']} changed ({old['size']} -> {record['size']} bytes, other content)"
            )
    missing = sorted(set(before) - {record["path"] for record in current})
    return f"{missing[0]} is not given" if missing else "in another order"


def _check_manifest(fs: Any, root: str, manifest: Dict[str, Any]) -> None:
    """Write the run's manifest, or compare it with the one a previous run left: a resumed run
    must embed the same inputs with the same biLM the same way."""
    path = f"{root}/{MANIFEST}"
    previous = _read_manifest(fs, root)
    if previous is None:
        with fs.open_output_stream(path + ".partial") as out:
            out.write(json.dumps(manifest, indent=1).encode("utf-8"))
        fs.move(path + ".partial", path)
        return
    again = "resume with the same inputs, biLM and options, start over with --overwrite, or write elsewhere"
    if "inputs" not in previous:
        raise UsageError(
            f"{path}: this folder holds a run of an earlier elmo-embed-corpus that did not record "
            f"its inputs and biLM; start over with --overwrite, or write elsewhere"
        )
    changed = [key for key in manifest if key not in INFORMATIONAL]
    changed = [key for key in changed if previous.get(key) != manifest[key]]
    if "inputs" in changed and "shards" in changed:
        changed.remove("shards")  # the inputs' shards
    words = {
        "bilm_sha256": "biLM (its files' SHA-256 {} -> {})".format(
            str(previous.get("bilm_sha256"))[:12], str(manifest.get("bilm_sha256"))[:12]
        ),
    }
    if "inputs" in changed:
        words["inputs"] = f"inputs ({_inputs_changed(previous['inputs'], manifest['inputs'])})"
    if changed:
        what = ", ".join(words.get(key, key) for key in changed)
        raise UsageError(f"{path}: this folder holds a run with other {what}; {again}")


def _overwrite(fs: Any, root: str) -> None:
    """Delete what runs of `elmo-embed-corpus` wrote in `root` (shards, partial files, the
    manifest and the summary), nothing else."""
    import pyarrow.fs as pafs

    ours = (".parquet", ".partial", MANIFEST, SUMMARY)
    for item in fs.get_file_info(pafs.FileSelector(root)):
        if item.type == pafs.FileType.File and item.base_name.endswith(ours):
            fs.delete_file(f"{root}/{item.base_name}")


def _complete(fs: Any, path: str, rows: int) -> Optional[str]:
    """None when the Parquet file `path` has a footer and `rows` rows, else what is wrong."""
    pq = require_pyarrow()
    try:
        with fs.open_input_file(path) as handle:
            found = pq.ParquetFile(handle).metadata.num_rows
    except (ValueError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
        return f"truncated or damaged ({str(error).splitlines()[0]})"
    return None if found == rows else f"{found} rows, not {rows}"


def _count(number: float, unit: str) -> str:
    return f"no {unit}" if number == 0 else f"{number:g} {unit}{'s' if number != 1 else ''}"


def check_resources(ray: Any, workers: int, cpus: int, gpus: float) -> None:
    """Refuse (one line) `workers` actors of `cpus` CPUs and `gpus` GPUs that the Ray cluster
    cannot hold: Ray itself would wait for them forever."""
    total = ray.cluster_resources()
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")] or [total]
    has_cpus, has_gpus = total.get("CPU", 0.0), total.get("GPU", 0.0)
    has = f"{_count(has_cpus, 'CPU')} ({_count(has_gpus, 'GPU')})"
    if gpus > 0:
        largest = max(node.get("GPU", 0.0) for node in nodes)
        flag = f"--gpus-per-worker {gpus:g}"
        if has_gpus == 0:
            raise UsageError(
                f"{flag} asks for {_count(gpus, 'GPU')} per worker; the Ray cluster has no GPU "
                f"({_count(has_cpus, 'CPU')})"
            )
        if largest < gpus:
            raise UsageError(
                f"{flag} asks for {_count(gpus, 'GPU')} per worker; the Ray cluster's largest "
                f"machine has {_count(largest, 'GPU')}"
            )
        if workers * gpus > has_gpus:
            raise UsageError(
                f"{flag} --num-workers {workers} asks for {_count(workers * gpus, 'GPU')} "
                f"({gpus:g} per worker); the Ray cluster has {_count(has_gpus, 'GPU')} "
                f"({_count(has_cpus, 'CPU')})"
            )
    largest = max(node.get("CPU", 0.0) for node in nodes)
    if cpus > largest or workers * cpus > has_cpus:
        raise UsageError(
            f"--cpus-per-worker {cpus} --num-workers {workers} asks for "
            f"{_count(workers * cpus, 'CPU')} ({cpus} per worker); the Ray cluster has {has}"
            + (f", {largest:g} on its largest machine" if len(nodes) > 1 else "")
        )


def _remove_partials(fs: Any, root: str) -> List[str]:
    """Delete the partial shard files under `root` (one run per folder at a time, so none is
    being written) and return the names of the other files."""
    import pyarrow.fs as pafs

    names = [item.base_name for item in fs.get_file_info(pafs.FileSelector(root))]
    for name in names:
        if name.endswith(".partial"):
            fs.delete_file(f"{root}/{name}")
    return [name for name in names if not name.endswith(".partial")]


def embed_corpus(
    inputs: Sequence[str],
    output_dir: str,
    options_file: "Optional[str | os.PathLike[str]]" = None,
    weight_file: "Optional[str | os.PathLike[str]]" = None,
    layers: Layers = Layers(),
    dtype: str = "float32",
    batch_size: int = BULK_BATCH_SIZE,
    shard_lines: int = 1000,
    num_workers: int = 1,
    cpus_per_worker: int = 1,
    gpus_per_worker: float = 0.0,
    address: Optional[str] = None,
    skip_bad_lines: bool = False,
    precision: str = "float32",
    overwrite: bool = False,
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS,
) -> Dict[str, Any]:
    """Embed every line of `inputs` into Parquet shards under `output_dir` (see the module;
    `overwrite`: delete an earlier run's shards there first); returns the run's summary (also
    written to `_summary.json`)."""
    ray = require_ray()

    options_file = os.fspath(options_file) if options_file else None
    weight_file = os.fspath(weight_file) if weight_file else None

    if dtype not in DTYPES:
        raise UsageError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if min(batch_size, shard_lines, num_workers, cpus_per_worker) < 1 or gpus_per_worker < 0:
        raise UsageError("sizes and worker counts must be at least 1 (GPUs per worker >= 0)")
    shards, skipped = plan(inputs, shard_lines, skip_bad_lines)
    fs, root = filesystem(output_dir)
    fs.create_dir(root, recursive=True)
    if overwrite:
        _overwrite(fs, root)
    size = _shard_size(fs, root, shards, shard_lines, num_workers)
    if size != shard_lines:  # a small corpus: smaller shards, so that every worker gets one
        lines = sum(s.lines for s in shards)
        shards, skipped = plan(inputs, size, skip_bad_lines)
        if len(shards) < num_workers:
            logger.warning(
                "elmo-embed-corpus: %d lines for %d workers: %d shards of one line, %d workers",
                lines,
                num_workers,
                len(shards),
                len(shards),
            )
        else:
            logger.info(
                "elmo-embed-corpus: %d lines in %d shards of %d (not %d) so that %d workers get work",
                lines,
                len(shards),
                size,
                shard_lines,
                num_workers,
            )
    arguments = {
        "options_file": options_file,
        "weight_file": weight_file,
        "layers": dataclasses.asdict(layers),
        "dtype": dtype,
        "precision": precision,
        "shard_lines": shard_lines,
        # what the vectors are computed from (--batch-size changes float32 rounding only)
        "bilm_sha256": bilm_sha256(options_file, weight_file),
        "inputs": [input_record(file) for file in dict.fromkeys(s.file for s in shards)],
    }
    if size != shard_lines:  # the split of a small corpus
        arguments["lines_per_shard"] = size
    _check_manifest(fs, root, _manifest(arguments, shards))
    present = set(_remove_partials(fs, root))  # left by a killed run
    pending = []
    for shard in shards:
        path = f"{root}/{shard.name}.parquet"
        if f"{shard.name}.parquet" in present:
            wrong = _complete(fs, path, shard.lines - len(shard.skipped))
            if wrong is None:
                continue
            logger.warning("elmo-embed-corpus: %s: %s; embedding it again", path, wrong)
            fs.delete_file(path)
        pending.append(shard)
    workers: Dict[int, float] = {}  # peak RSS of each worker process
    busy: Dict[int, float] = {}  # seconds each worker spent on its shards
    started = time.perf_counter()
    if pending:
        ready = ray.is_initialized()
        if not ready:
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
        try:
            check_resources(ray, min(num_workers, len(pending)), cpus_per_worker, gpus_per_worker)
            context = ray.data.DataContext.get_current()
            context.enable_progress_bars = False
            dataset = ray.data.from_items(
                [{"shard": json.dumps(dataclasses.asdict(s))} for s in pending],
                override_num_blocks=len(pending),
            )
            results = dataset.map_batches(
                ShardEmbedder,
                fn_constructor_kwargs={
                    "options_file": options_file,
                    "weight_file": weight_file,
                    "layers": dataclasses.asdict(layers),
                    "dtype": dtype,
                    "batch_size": batch_size,
                    "output_dir": output_dir,
                    "threads": cpus_per_worker,
                    "precision": precision,
                    "max_tokens": max_tokens,
                },
                batch_size=1,
                batch_format="numpy",
                # one shard at a time per actor: a shard is a long task, and a second queued on
                # a busy actor while another is idle would serialise them (Ray's default: 4)
                compute=ray.data.ActorPoolStrategy(
                    size=min(num_workers, len(pending)), max_tasks_in_flight_per_actor=1
                ),
                num_cpus=cpus_per_worker,
                num_gpus=gpus_per_worker or None,
            )
            tokens = {s.name: s.tokens for s in pending}
            progress = tqdm(
                total=sum(tokens.values()), desc="elmo-embed-corpus", unit=" tok", file=sys.stderr
            )
            for row in results.iter_rows():
                progress.update(tokens[str(row["shard"])])
                pid = int(row["pid"])
                workers[pid] = max(workers.get(pid, 0.0), float(row["peak_rss_mb"]))
                busy[pid] = busy.get(pid, 0.0) + float(row["seconds"])
            progress.close()
            _remove_partials(fs, root)  # left by workers that died (their shards were redone)
        finally:
            if not ready:
                ray.shutdown()
    seconds = time.perf_counter() - started
    embedded = sum(s.tokens for s in pending)
    summary = {
        "shards": len(shards),
        "embedded_shards": len(pending),
        "sentences": sum(s.lines - len(s.skipped) for s in shards),
        "tokens": sum(s.tokens for s in shards),
        "skipped_lines": skipped,
        "seconds": round(seconds, 2),
        "tokens_per_s": round(embedded / seconds, 1) if pending else None,
        # without Ray's and the workers' start-up: the tokens over the busiest worker's time
        "embedding_tokens_per_s": round(embedded / max(busy.values()), 1) if busy else None,
        "worker_peak_rss_mb": sorted(round(rss, 1) for rss in workers.values()),
    }
    with fs.open_output_stream(f"{root}/{SUMMARY}.partial") as out:
        out.write(json.dumps(summary, indent=1).encode("utf-8"))
    fs.move(f"{root}/{SUMMARY}.partial", f"{root}/{SUMMARY}")
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("inputs", nargs="+", help="text files, folders or globs (or URIs)")
    parser.add_argument("output_dir", help="folder of Parquet shards (or a URI)")
    add_layer_arguments(parser)
    add_bilm_arguments(parser)
    add_precision_argument(parser)
    add_batch_arguments(parser, BULK_BATCH_SIZE)
    parser.add_argument("--shard-lines", type=int, default=1000, help="lines per Parquet shard")
    parser.add_argument("--num-workers", type=int, default=1, help="biLM actors (default 1)")
    parser.add_argument("--cpus-per-worker", type=int, default=1, help="CPU threads per actor")
    parser.add_argument("--gpus-per-worker", type=float, default=0.0, help="e.g. 1, or 0.5")
    parser.add_argument(
        "--address", help="a Ray cluster's address (default: a local Ray on this machine)"
    )
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="skip (and count) empty or non-UTF-8 lines instead of stopping at the first",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start over: delete an earlier run's shards, manifest and summary in output_dir",
    )
    return parser


@filtered_stderr()  # Ray's start-up noise off stderr (elmo_bilm.integrations.ray_noise)
@reports_errors("elmo-embed-corpus", also=(ImportError,), returns=True)
def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `elmo-embed-corpus` console script."""
    parser = add_arguments(
        argparse.ArgumentParser(
            prog="elmo-embed-corpus", description=__doc__.split("\n\n")[0].strip("`")
        )
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    summary = embed_corpus(
        args.inputs,
        args.output_dir,
        args.options_file,
        args.weight_file,
        layers_of(args),
        args.dtype,
        args.batch_size,
        args.shard_lines,
        args.num_workers,
        args.cpus_per_worker,
        args.gpus_per_worker,
        args.address,
        args.skip_bad_lines,
        args.precision,
        args.overwrite,
        args.max_tokens,
    )
    logger.info("%s", json.dumps(summary))
    return 0


def console() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console()
