"""`elmo-embed-corpus` on a local Ray against plain `elmo-embed`, on this machine: tokens/s (wall
time of the whole command: start-up, biLM loading, embedding, Parquet writing) and peak RSS per
process, for one and two workers of one thread each, at two corpus sizes (WikiText-test lines);
and the size of the Parquet output (float32, float16) against `elmo-embed`'s HDF5 (float32).

    python -m elmo_benchmarks.embed_corpus [--tokens 20000 80000]
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import List

from elmo_benchmarks.common import DATA, emit
from elmo_benchmarks.embed_cli import run

BIN = Path(sys.executable).parent


def corpus(path: Path, tokens: int) -> int:
    """The first WikiText-test lines (headings and blanks left out) holding `tokens` tokens."""
    lines: List[str] = []
    count = 0
    for line in (DATA / "wikitext" / "wiki.test.tokens").read_text().splitlines():
        words = line.split()
        if not words or words[0] == "=":
            continue
        lines.append(" ".join(words))
        count += len(words)
        if count >= tokens:
            break
    path.write_text("\n".join(lines) + "\n")
    return count


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else list(path.glob("*.parquet"))
    return round(sum(f.stat().st_size for f in files) / 2**20, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, nargs="+", default=[40_000, 160_000])
    args = parser.parse_args()
    one_thread = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    os.environ.update(one_thread)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for target in args.tokens:
            source = folder / f"wiki{target}.txt"
            tokens = corpus(source, target)
            hdf5 = folder / f"plain{target}.hdf5"
            seconds, rss = run([str(BIN / "elmo-embed"), str(source), str(hdf5)])
            emit(
                {
                    "bench": "embed_corpus",
                    "command": "elmo-embed (1 thread)",
                    "tokens": tokens,
                    "tokens_per_s": round(tokens / seconds),
                    "embedding_tokens_per_s": None,
                    "peak_rss_mb": [round(rss)],
                    "output_mb": size_mb(hdf5),
                }
            )
            for workers, dtype in ((1, "float32"), (2, "float32"), (2, "float16")):
                out = folder / f"ray{target}-{workers}-{dtype}"
                command = [str(BIN / "elmo-embed-corpus"), str(source), str(out)]
                command += ["--num-workers", str(workers), "--shard-lines", "200"]
                command += ["--dtype", dtype]
                seconds, _ = run(command)
                summary = json.loads((out / "_summary.json").read_text())
                emit(
                    {
                        "bench": "embed_corpus",
                        "command": f"elmo-embed-corpus --num-workers {workers} --dtype {dtype}",
                        "tokens": tokens,
                        "tokens_per_s": round(tokens / seconds),
                        "embedding_tokens_per_s": round(summary["embedding_tokens_per_s"]),
                        "peak_rss_mb": [round(r) for r in summary["worker_peak_rss_mb"]],
                        "output_mb": size_mb(out),
                    }
                )


if __name__ == "__main__":
    main()
