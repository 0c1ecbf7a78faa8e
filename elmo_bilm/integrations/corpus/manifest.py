"""What a corpus run leaves beside its shards, and what a re-run makes of it: `_manifest.json`
records what the shards are computed from (the biLM's SHA-256, each input's absolute path, size
and SHA-256, the options that change the vectors), so that a resume with other ones is refused
naming what changed; `_summary.json` says what the run did. A re-run embeds only the shards that
are missing or truncated, after deleting partial files a killed run left; `--overwrite` deletes
an earlier run's files first."""

import json
import logging
from typing import Any, Dict, List, Optional, Sequence

from elmo_bilm.formats.parquet import require_pyarrow
from elmo_bilm.integrations.corpus.plan import Shard, filesystem, lines_for_workers, location
from elmo_bilm.sources.resolver import resolve_bilm
from elmo_bilm.utils.files import UsageError, sha256_files

logger = logging.getLogger(__name__)

MANIFEST = "_manifest.json"
SUMMARY = "_summary.json"

# recorded for the reader, not compared: the same biLM by another path is the same biLM
INFORMATIONAL = ("options_file", "weight_file")


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


def manifest_of(arguments: Dict[str, Any], shards: Sequence[Shard]) -> Dict[str, Any]:
    """The manifest of a run: `arguments` (what the vectors are computed from) and its shards."""
    return {
        **arguments,
        "shards": [[s.name, s.file, s.first_line, s.lines, s.skipped] for s in shards],
    }


def write_json(fs: Any, path: str, value: Dict[str, Any]) -> None:
    """`value` as JSON at `path`, written to a partial file and moved into place (a killed run
    leaves the old file or the new one, never half of one)."""
    with fs.open_output_stream(path + ".partial") as out:
        out.write(json.dumps(value, indent=1).encode("utf-8"))
    fs.move(path + ".partial", path)


def write_summary(fs: Any, root: str, summary: Dict[str, Any]) -> None:
    """The run's summary, `_summary.json` in `root`."""
    write_json(fs, f"{root}/{SUMMARY}", summary)


def read_manifest(fs: Any, root: str) -> Optional[Dict[str, Any]]:
    """The manifest an earlier run left in `root`, or None."""
    try:
        with fs.open_input_stream(f"{root}/{MANIFEST}") as handle:
            manifest: Dict[str, Any] = json.loads(handle.read().decode("utf-8"))
            return manifest
    except FileNotFoundError:
        return None


def shard_size(
    fs: Any, root: str, shards: Sequence[Shard], shard_lines: int, num_workers: int
) -> int:
    """Lines per shard: an earlier run's in this folder (a resume keeps its shards, whatever the
    worker count), else `shard_lines`, or fewer when that leaves a worker without a shard."""
    previous = read_manifest(fs, root)
    if previous is not None and previous.get("shard_lines") == shard_lines:
        return int(previous.get("lines_per_shard", shard_lines))
    if len(shards) >= num_workers:
        return shard_lines
    return lines_for_workers(shards, shard_lines, num_workers)


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


def check_manifest(fs: Any, root: str, manifest: Dict[str, Any]) -> None:
    """Write the run's manifest, or compare it with the one a previous run left: a resumed run
    must embed the same inputs with the same biLM the same way."""
    path = f"{root}/{MANIFEST}"
    previous = read_manifest(fs, root)
    if previous is None:
        write_json(fs, path, manifest)
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


def remove_run(fs: Any, root: str) -> None:
    """Delete what runs of `elmo-embed-corpus` wrote in `root` (shards, partial files, the
    manifest and the summary), nothing else (`--overwrite`)."""
    import pyarrow.fs as pafs

    ours = (".parquet", ".partial", MANIFEST, SUMMARY)
    for item in fs.get_file_info(pafs.FileSelector(root)):
        if item.type == pafs.FileType.File and item.base_name.endswith(ours):
            fs.delete_file(f"{root}/{item.base_name}")


def remove_partials(fs: Any, root: str) -> List[str]:
    """Delete the partial shard files under `root` (one run per folder at a time, so none is
    being written) and return the names of the other files."""
    import pyarrow.fs as pafs

    names = [item.base_name for item in fs.get_file_info(pafs.FileSelector(root))]
    for name in names:
        if name.endswith(".partial"):
            fs.delete_file(f"{root}/{name}")
    return [name for name in names if not name.endswith(".partial")]


def _complete(fs: Any, path: str, rows: int) -> Optional[str]:
    """None when the Parquet file `path` has a footer and `rows` rows, else what is wrong."""
    pq = require_pyarrow()
    try:
        with fs.open_input_file(path) as handle:
            found = pq.ParquetFile(handle).metadata.num_rows
    except (ValueError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
        return f"truncated or damaged ({str(error).splitlines()[0]})"
    return None if found == rows else f"{found} rows, not {rows}"


def pending_shards(fs: Any, root: str, shards: Sequence[Shard]) -> List[Shard]:
    """The shards still to embed: those without a complete Parquet file in `root` (a footer and
    their rows). Partial files a killed run left, and shards cut short, are deleted."""
    present = set(remove_partials(fs, root))  # left by a killed run
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
    return pending
