"""`elmo-embed-corpus`: ELMo vectors for a corpus of text files, spread over Ray Data actors (one
biLM each; local Ray by default, any Ray cluster by `--address`), written as Parquet shards
(`elmo_bilm.formats.parquet`). Needs elmo-bilm's `ray` extra (`elmo_bilm.formats.parquet.EXTRA`).

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

The package by concern: `plan` (inputs, shards, a shard's sentences), `manifest` (the run's
manifest and summary, resuming), `resources` (Ray and what its cluster holds), `worker` (the
Ray actor); here the run's options (`CorpusOptions`) and the run (`embed_corpus`). The command
is `elmo_bilm.cli.embed_corpus`.
"""

import dataclasses
import json
import logging
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from elmo_bilm.formats.parquet import DTYPES
from elmo_bilm.integrations.corpus.manifest import (
    MANIFEST,
    SUMMARY,
    bilm_sha256,
    check_manifest,
    input_record,
    manifest_of,
    pending_shards,
    remove_partials,
    remove_run,
    shard_size,
    write_summary,
)
from elmo_bilm.integrations.corpus.plan import (
    Shard,
    filesystem,
    input_files,
    lines_for_workers,
    plan,
    shard_sentences,
)
from elmo_bilm.integrations.corpus.resources import check_resources, require_ray
from elmo_bilm.integrations.corpus.worker import ShardEmbedder
from elmo_bilm.runtime.engine import BULK_BATCH_SIZE, DEFAULT_MAX_TOKENS
from elmo_bilm.runtime.layers import Layers
from elmo_bilm.utils.checks import check_output, finite_number, whole_number
from elmo_bilm.utils.files import UsageError
from elmo_bilm.utils.progress import progress_bar

__all__ = [
    "MANIFEST",
    "SUMMARY",
    "CorpusOptions",
    "Shard",
    "ShardEmbedder",
    "bilm_sha256",
    "check_resources",
    "embed_corpus",
    "input_files",
    "input_record",
    "lines_for_workers",
    "plan",
    "require_ray",
    "shard_sentences",
]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class CorpusOptions:
    """How a corpus run embeds (the command's options): the biLM (`options_file`,
    `weight_file`: as `elmo_bilm.sources.resolver.resolve_bilm` takes them, paths as str or
    os.PathLike; neither: the shipped biLM), what it keeps of the layers and how it stores them
    (`layers`, `dtype`, `precision`), how it batches (`batch_size` sentences, `max_tokens`
    padded tokens), how it splits the work (`shard_lines` lines per shard, `num_workers` actors
    of `cpus_per_worker` threads and `gpus_per_worker` GPUs, on the Ray cluster at `address` or
    a local one), `skip_bad_lines` (skip and count empty or non-UTF-8 lines rather than stop)
    and `overwrite` (delete an earlier run's files in the output folder first). Checked when
    made: a `UsageError` names what is wrong."""

    options_file: Optional[str] = None
    weight_file: Optional[str] = None
    layers: Layers = Layers()
    dtype: str = "float32"
    batch_size: int = BULK_BATCH_SIZE
    max_tokens: Optional[int] = DEFAULT_MAX_TOKENS
    shard_lines: int = 1000
    num_workers: int = 1
    cpus_per_worker: int = 1
    gpus_per_worker: float = 0.0
    address: Optional[str] = None
    skip_bad_lines: bool = False
    precision: str = "float32"
    overwrite: bool = False

    def __post_init__(self) -> None:
        for name in ("options_file", "weight_file"):  # a path as str, as the manifest keeps it
            value = getattr(self, name)
            object.__setattr__(self, name, os.fspath(value) if value else None)
        if self.dtype not in DTYPES:
            raise UsageError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        for name in ("batch_size", "shard_lines", "num_workers", "cpus_per_worker"):
            whole_number(getattr(self, name), name)
        whole_number(self.max_tokens, "max_tokens", optional=True)
        finite_number(self.gpus_per_worker, "gpus_per_worker", minimum=0.0)


def embed_corpus(
    inputs: Sequence[str],
    output_dir: str,
    options: CorpusOptions = CorpusOptions(),
    **settings: Any,
) -> Dict[str, Any]:
    """Embed every line of `inputs` into Parquet shards under `output_dir` as `options` say (see
    the module); `settings`: `CorpusOptions` fields by name, in place of `options`' own
    (`embed_corpus(inputs, out, shard_lines=10)`). Returns the run's summary (also written to
    `_summary.json`)."""
    if not isinstance(options, CorpusOptions):
        raise TypeError(
            f"embed_corpus: options must be a CorpusOptions, not {type(options).__name__} "
            "(name the biLM's files as options_file= and weight_file=)"
        )
    if settings:
        options = dataclasses.replace(options, **settings)  # checked as CorpusOptions(...) is
    _check_output_dir(output_dir)  # before Ray starts
    ray = require_ray()

    shards, skipped = plan(inputs, options.shard_lines, options.skip_bad_lines)
    fs, root = filesystem(output_dir)
    fs.create_dir(root, recursive=True)
    if options.overwrite:
        remove_run(fs, root)
    size = shard_size(fs, root, shards, options.shard_lines, options.num_workers)
    if size != options.shard_lines:  # a small corpus: smaller shards, so that every worker gets one
        shards, skipped = _replan(inputs, shards, size, options)
    check_manifest(fs, root, manifest_of(_arguments(options, shards, size), shards))
    pending = pending_shards(fs, root, shards)
    started = time.perf_counter()
    workers, busy = _embed(ray, pending, output_dir, fs, root, options) if pending else ({}, {})
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
    write_summary(fs, root, summary)
    return summary


def _replan(
    inputs: Sequence[str], shards: Sequence[Shard], size: int, options: CorpusOptions
) -> Tuple[List[Shard], int]:
    """The shards of `size` lines that give each worker work (`shards`: of `shard_lines`), and
    the bad lines skipped; one line says so."""
    lines = sum(s.lines for s in shards)
    replanned, skipped = plan(inputs, size, options.skip_bad_lines)
    if len(replanned) < options.num_workers:
        logger.warning(
            "elmo-embed-corpus: %d lines for %d workers: %d shards of one line, %d workers",
            lines,
            options.num_workers,
            len(replanned),
            len(replanned),
        )
    else:
        logger.info(
            "elmo-embed-corpus: %d lines in %d shards of %d (not %d) so that %d workers get work",
            lines,
            len(replanned),
            size,
            options.shard_lines,
            options.num_workers,
        )
    return replanned, skipped


def _arguments(options: CorpusOptions, shards: Sequence[Shard], size: int) -> Dict[str, Any]:
    """What the run's vectors are computed from, as its manifest records them."""
    arguments = {
        "options_file": options.options_file,
        "weight_file": options.weight_file,
        "layers": dataclasses.asdict(options.layers),
        "dtype": options.dtype,
        "precision": options.precision,
        "shard_lines": options.shard_lines,
        # what the vectors are computed from (--batch-size changes float32 rounding only)
        "bilm_sha256": bilm_sha256(options.options_file, options.weight_file),
        "inputs": [input_record(file) for file in dict.fromkeys(s.file for s in shards)],
    }
    if size != options.shard_lines:  # the split of a small corpus
        arguments["lines_per_shard"] = size
    return arguments


def _embed(
    ray: Any,
    pending: Sequence[Shard],
    output_dir: str,
    fs: Any,
    root: str,
    options: CorpusOptions,
) -> Tuple[Dict[int, float], Dict[int, float]]:
    """Embed the `pending` shards on `options.num_workers` `ShardEmbedder` actors (starting a
    Ray, and stopping it after, unless one is running), with a progress bar of tokens; returns
    each worker process's peak RSS (MB) and seconds spent on its shards."""
    workers: Dict[int, float] = {}  # peak RSS of each worker process
    busy: Dict[int, float] = {}  # seconds each worker spent on its shards
    ready = ray.is_initialized()
    if not ready:
        ray.init(address=options.address, include_dashboard=False, logging_level=logging.WARNING)
    try:
        actors = min(options.num_workers, len(pending))
        check_resources(ray, actors, options.cpus_per_worker, options.gpus_per_worker)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        dataset = ray.data.from_items(
            [{"shard": json.dumps(dataclasses.asdict(s))} for s in pending],
            override_num_blocks=len(pending),
        )
        results = dataset.map_batches(
            ShardEmbedder,
            fn_constructor_kwargs={
                "options_file": options.options_file,
                "weight_file": options.weight_file,
                "layers": dataclasses.asdict(options.layers),
                "dtype": options.dtype,
                "batch_size": options.batch_size,
                "output_dir": output_dir,
                "threads": options.cpus_per_worker,
                "precision": options.precision,
                "max_tokens": options.max_tokens,
            },
            batch_size=1,
            batch_format="numpy",
            # one shard at a time per actor: a shard is a long task, and a second queued on a
            # busy actor while another is idle would serialise them (Ray's default: 4)
            compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1),
            num_cpus=options.cpus_per_worker,
            num_gpus=options.gpus_per_worker or None,
        )
        tokens = {s.name: s.tokens for s in pending}
        progress = progress_bar(total=sum(tokens.values()), desc="elmo-embed-corpus", unit=" tok")
        for row in results.iter_rows():
            progress.update(tokens[str(row["shard"])])
            pid = int(row["pid"])
            workers[pid] = max(workers.get(pid, 0.0), float(row["peak_rss_mb"]))
            busy[pid] = busy.get(pid, 0.0) + float(row["seconds"])
        progress.close()
        remove_partials(fs, root)  # left by workers that died (their shards were redone)
    finally:
        if not ready:
            ray.shutdown()
    return workers, busy


def _check_output_dir(output_dir: str) -> None:
    """A local output folder, before any work (`check_output`; a URI's is the cluster's file
    system's to check)."""
    if "://" not in os.fspath(output_dir):
        check_output(output_dir, overwrite=True, kind="folder")
