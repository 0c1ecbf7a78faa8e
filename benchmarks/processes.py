"""Commands run as processes of their own, with what the kernel says they used: the one runner of
the whole-process benchmarks (`embed_cli`, `embed_memory`, `protein_memory`).

This module imports no torch, and a parent whose children's memory is measured must not either:
Linux keeps the peak RSS of the process that starts a child in the child's `ru_maxrss` (the
high-water mark of the memory it leaves at `exec`), so a parent that had loaded torch would set a
floor of its own size under every figure (893 MB with `benchmarks.common` imported, which brings
AllenNLP). `random_weights` makes the benchmark weights in a child for that reason."""

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple


def measure(command: List[str]) -> Tuple[float, float]:
    """Run `command` to its end: its wall seconds and peak RSS (MB, `wait4`'s `ru_maxrss`).

    Its stderr (progress bars included) goes to a file, not a pipe: a pipe read only at the end
    fills up and stalls the child. A failure raises RuntimeError with the end of that stderr."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(command)} failed:\n{tail}")
    return seconds, usage.ru_maxrss / 1024.0


def peak(command: List[str]) -> Dict[str, float]:
    """`measure(command)` as a benchmark row's fields: `peak_rss_mb` and `seconds`, rounded."""
    seconds, peak_rss_mb = measure(command)
    return {"peak_rss_mb": round(peak_rss_mb, 1), "seconds": round(seconds, 1)}


def random_weights(config: str) -> Dict[str, str]:
    """`benchmarks.common.random_bilm_tf(config)`'s files, made (or found in the cache) by a
    child process, so that this one stays without torch."""
    code = (
        "import json, sys; from benchmarks.common import random_bilm_tf; "
        "print(json.dumps(random_bilm_tf(sys.argv[1])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, config], check=True, capture_output=True, text=True
    )
    files: Dict[str, str] = json.loads(out.stdout.strip().splitlines()[-1])
    return files
