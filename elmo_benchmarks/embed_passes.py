"""Passes of the bulk embedding loop in one process: the time of each pass of `embed_sorted`
(elmo-embed's batching and all layers) over a file, at each thread count, the load time too.

Two versions of the code compare side by side by running this script alternately with each
one's `elmo_bilm` first on `PYTHONPATH` (a `git worktree` of the earlier commit), in one shell
loop, so both meet the same machine state:

    python -m elmo_benchmarks.embed_passes --threads 1 2 --sentences 200
    PYTHONPATH=/path/to/before python -m elmo_benchmarks.embed_passes --threads 1 2 --sentences 200

The word cache is emptied before each pass (a first pass over new text); the first pass also
packs the weights for oneDNN. `--precision` sets an inference precision after loading, and
`--cell eager` keeps the LSTM step's pointwise work as eager ops (`elmo_bilm.model.fused_cell`
off), so the fused cell compares with the ops it replaces in one shell loop:

    for cell in fused eager fused eager; do
      python -m elmo_benchmarks.embed_passes --threads 2 --precision bfloat16 --cell $cell
    done
"""

import argparse
import time
from typing import Any, Dict, List, Optional

import torch

import elmo_bilm
from elmo_benchmarks.common import conll_dev_sentences, emit, random_bilm_tf
from elmo_bilm.model import fused_cell
from elmo_bilm.runtime.engine import BULK_BATCH_SIZE, embed_sorted
from elmo_bilm.runtime.precision import PRECISIONS, set_precision
from elmo_bilm.sources.resolver import load_bilm


def passes(
    threads: int,
    sentences: List[List[str]],
    files: Dict[str, str],
    count: int,
    batch_size: int,
    precision: str = "float32",
) -> Dict[str, Any]:
    """Load the biLM and time `count` passes over `sentences` at `threads` intra-op threads."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    bilm = set_precision(load_bilm(files["options_file"], files["weight_file"]), precision)
    load_s = time.perf_counter() - start
    seconds = []
    for _ in range(count):
        bilm.char_cnn.clear_word_cache()
        start = time.perf_counter()
        for _batch, _layers in embed_sorted(bilm, sentences, lambda s: s, batch_size):
            pass
        seconds.append(time.perf_counter() - start)
    return {
        "threads": threads,
        "load_s": round(load_s, 3),
        "passes_s": [round(s, 3) for s in seconds],
        "tokens": sum(len(s) for s in sentences),
        "elmo_bilm": elmo_bilm.__file__,
    }


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="paper", help="elmo_benchmarks.common's random bilm-tf")
    parser.add_argument("--sentences", type=int, default=200, help="CoNLL-2003 dev, file order")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=BULK_BATCH_SIZE)
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument(
        "--cell",
        choices=["fused", "eager"],
        default="fused",
        help="the LSTM step's pointwise work: compiled where it builds (the default) or eager ops",
    )
    args = parser.parse_args(argv)
    if args.cell == "eager":
        fused_cell.MAX_THREADS = 0  # no thread count qualifies: every step takes the eager ops
    files = random_bilm_tf(args.config)
    sentences = conll_dev_sentences(args.sentences)
    records = []
    for threads in args.threads:
        record = passes(threads, sentences, files, args.passes, args.batch_size, args.precision)
        records.append(
            {
                "benchmark": "embed_passes",
                "config": args.config,
                "precision": args.precision,
                "cell": args.cell,
                **record,
            }
        )
        emit(records[-1])
    return records


if __name__ == "__main__":
    main()
