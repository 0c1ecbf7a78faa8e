"""Commands run as processes of their own, with what the kernel says they used: the one runner of
the whole-process benchmarks (`embed_cli`, `embed_memory`, `protein_memory`).

Linux keeps the peak RSS of the process that starts a child in the child's `ru_maxrss` (the
high-water mark of the memory it leaves at `exec`): `python -c pass` started from a process that
had touched 1.5 GB reports 1.5 GB. So `measure` starts each command from a small launcher process
(a bare interpreter, about 11 MB), which reads the command's `ru_maxrss` and hands it back; the
benchmark's own size (893 MB once `elmo_benchmarks.common` has imported AllenNLP) no longer sets a
floor under its figures."""

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

# Runs argv[2:] with stdout discarded, then writes [exit code, ru_maxrss in KB] to argv[1].
_LAUNCHER = (
    "import json, os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump([os.waitstatus_to_exitcode(status), usage.ru_maxrss], out)\n"
)


def measure(command: List[str]) -> Tuple[float, float]:
    """Run `command` to its end: its wall seconds and peak RSS (MB, `wait4`'s `ru_maxrss`),
    started from the launcher (see the module's docstring; the wall time includes its start,
    some 20 ms).

    Its stderr (progress bars included) goes to a file, not a pipe: a pipe read only at the end
    fills up and stalls the child. A failure raises RuntimeError with the end of that stderr."""
    with tempfile.TemporaryFile() as errors, tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        start = time.perf_counter()
        launcher = [sys.executable, "-S", "-c", _LAUNCHER, report, *command]
        launched = subprocess.run(launcher, stdout=subprocess.DEVNULL, stderr=errors)
        seconds = time.perf_counter() - start
        code, max_rss_kb = launched.returncode, 0
        if os.path.exists(report):  # not there: the launcher could not start the command
            with open(report) as handle:
                code, max_rss_kb = json.load(handle)
        if code != 0 or launched.returncode != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(command)} failed:\n{tail}")
    return seconds, max_rss_kb / 1024.0


def peak(command: List[str]) -> Dict[str, float]:
    """`measure(command)` as a benchmark row's fields: `peak_rss_mb` and `seconds`, rounded."""
    seconds, peak_rss_mb = measure(command)
    return {"peak_rss_mb": round(peak_rss_mb, 1), "seconds": round(seconds, 1)}


def random_weights(config: str) -> Dict[str, str]:
    """`elmo_benchmarks.common.random_bilm_tf(config)`'s files, made (or found in the cache) by a
    child process: a benchmark that only runs commands need not import torch and AllenNLP."""
    code = (
        "import json, sys; from elmo_benchmarks.common import random_bilm_tf; "
        "print(json.dumps(random_bilm_tf(sys.argv[1])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, config], check=True, capture_output=True, text=True
    )
    files: Dict[str, str] = json.loads(out.stdout.strip().splitlines()[-1])
    return files
