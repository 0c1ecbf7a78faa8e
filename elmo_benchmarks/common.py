"""Shared pieces of the benchmarks: biLM configurations, random bilm-tf weights, data, measurements."""

import contextlib
import itertools
import json
import os
import resource
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from elmo_bilm.formats.bilm_tf import export_bilm_tf  # noqa: E402
from elmo_bilm.model.bilm import BiLm  # noqa: E402
from elmo_plugin.common.config_env import data_dir  # noqa: E402
from elmo_plugin.lm.dataset_readers.lm_corpus import read_sentences  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = data_dir() or REPO_ROOT.parent / "shared" / "data"
CACHE = Path(os.environ.get("ELMO_PLUGIN_BENCH_CACHE", "/tmp/elmo_plugin_bench"))


def _options(filters: List[List[int]], n_highway: int, dim: int, proj: int) -> Dict[str, Any]:
    return {
        "char_cnn": {
            "activation": "relu",
            "embedding": {"dim": 16},
            "filters": filters,
            "max_characters_per_token": 50,
            "n_characters": 262,
            "n_highway": n_highway,
        },
        "lstm": {
            "cell_clip": 3,
            "dim": dim,
            "n_layers": 2,
            "proj_clip": 3,
            "projection_dim": proj,
            "use_skip_connections": True,
        },
    }


PAPER_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
# "tiny" tests the benchmarks; the two configurations of the issue: "small" (1024 cells, 128
# projection, 2048 filters, 1 highway) and the paper's (4096 cells, 512 projection, 2 highway);
# "seqvec" the protein biLM's size (issue 68).
CONFIGS = {
    "tiny": _options([[1, 4], [2, 8]], 1, 32, 8),  # for tests of the benchmarks themselves
    "small": _options(PAPER_FILTERS, 1, 1024, 128),
    "paper": _options(PAPER_FILTERS, 2, 4096, 512),
    # SeqVec's (Heinzinger et al. 2019): the paper's character CNN, 512 cells, 512 projection
    "seqvec": _options(PAPER_FILTERS, 2, 512, 512),
}


def random_bilm_tf(config: str, seed: int = 0) -> Dict[str, str]:
    """bilm-tf files with random weights for `config` (cached under $ELMO_PLUGIN_BENCH_CACHE)."""
    folder = CACHE / config
    files = {
        "options_file": str(folder / "options.json"),
        "weight_file": str(folder / "weights.hdf5"),
    }
    if not (folder / "weights.hdf5").exists():
        folder.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(seed)
        bilm = BiLm(CONFIGS[config])
        with torch.no_grad():
            bilm.char_cnn.char_embedding.weight.normal_(0.0, 1.0)
            for conv in bilm.char_cnn.convolutions:
                conv.weight.uniform_(-0.1, 0.1)
        export_bilm_tf(bilm, files["options_file"], files["weight_file"])
    return files


def conll_dev_sentences(limit: int) -> List[List[str]]:
    """The first `limit` sentences of CoNLL-2003 dev (eng.testa), in file order."""
    return list(
        itertools.islice(read_sentences(str(DATA / "conll2003" / "eng.testa"), "conll2003"), limit)
    )


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def timed(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


@contextlib.contextmanager
def threads_restored() -> Iterator[None]:
    """torch's intra-op thread count as it was before the block, whatever the block sets."""
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def kernels() -> Dict[str, Any]:
    """Which CPU kernels ran: torch's dispatch level (`ATEN_CPU_CAPABILITY` lowers it), whether
    fbgemm's int8 products have VNNI (read from the CPU itself, which no variable caps) and
    oneDNN's cap; under an emulator (`qemu-x86_64 -cpu ...`) these are the emulated CPU's."""
    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "vnni": torch.cpu._is_vnni_supported(),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "(not set)"),
    }


def emit(record: Dict[str, Any]) -> None:
    """One JSON line on stdout for run_all.py to collect."""
    print("BENCH " + json.dumps(record), flush=True)
