"""The char CNN's new words of a bulk run, encoded by blocks of `--blocks` words in order of
length (`elmo_bilm.model.char_cnn.WORD_BLOCK`) against all of a batch's words at once (`0`), per
precision: what cutting each block to its own longest word saves; and with `--linear-rows`, a
highway layer's product on packed weights (`onednn.PackedWeights.linear`, its weight check
included, at every row count) against `nn.Linear`, per number of rows.

    python -m elmo_benchmarks.char_cnn_blocks --sentences 1000 --blocks 0 64 128 256 512
    python -m elmo_benchmarks.char_cnn_blocks --linear-rows 8 16 32 64 256 --threads 1 2

The words are those `elmo-embed` encodes: the first `--sentences` CoNLL-2003 dev sentences in its
length-sorted batches, each batch's distinct words not seen in an earlier batch (the word cache's
misses). Prints one record per (precision, block): the best of `--repeats` passes over every
batch at torch's thread count, with the convolutions alone (highways and projection skipped) and
the whole encoder.
"""

import argparse
import functools
from typing import Any, Callable, Dict, List, Optional

import torch

from elmo_benchmarks.common import CONFIGS, conll_dev_sentences, emit, threads_restored, timed
from elmo_bilm.model import char_cnn, onednn
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.char_cnn import add_sentence_boundaries
from elmo_bilm.runtime.engine import BULK_BATCH_SIZE, DEFAULT_MAX_TOKENS, length_batches
from elmo_bilm.runtime.precision import missing_bfloat16_instructions, set_precision


def new_words(bilm: BiLm, sentences: List[List[str]]) -> List[torch.Tensor]:
    """Per bulk batch, the character ids of its distinct words that no earlier batch had."""
    seen = set()
    batches = []
    for batch in length_batches(
        sentences, lambda words: words, BULK_BATCH_SIZE, DEFAULT_MAX_TOKENS
    ):
        ids = bilm.batch_to_ids(batch)
        ids, mask = add_sentence_boundaries(ids, (ids > 0).any(-1))
        words = torch.unique(ids.reshape(-1, ids.shape[-1])[mask.reshape(-1)], dim=0)
        keys = [word.numpy().tobytes() for word in words]
        fresh = [i for i, key in enumerate(keys) if key not in seen]
        seen.update(keys)
        batches.append(words[fresh])
    return batches


def each(function: Callable[[torch.Tensor], Any], batches: List[torch.Tensor]) -> None:
    """`function` of every batch."""
    for words in batches:
        function(words)


def best_seconds(function: Callable[[], Any], repeats: int, calls: int = 1) -> float:
    """The best of `repeats` timings of `calls` calls of `function`, seconds a call."""
    return min(timed(lambda: [function() for _ in range(calls)]) for _ in range(repeats)) / calls


def linear_records(
    config: str, rows: List[int], threads: List[int], repeats: int
) -> List[Dict[str, Any]]:
    """A highway layer's `nn.Linear` (`config`'s filters square) against its packed product
    (at every row count: no `MIN_LINEAR_ROWS`), each call checking the weights as in use:
    milliseconds per call, best of `repeats` x 20."""
    n_filters = sum(number for _, number in CONFIGS[config]["char_cnn"]["filters"])
    torch.manual_seed(0)
    layer = torch.nn.Linear(n_filters, n_filters)
    packed = onednn.PackedWeights()
    records = []
    default = onednn.MIN_LINEAR_ROWS
    try:
        onednn.MIN_LINEAR_ROWS = 0
        with threads_restored(), torch.no_grad():
            for count in threads or [torch.get_num_threads()]:
                torch.set_num_threads(count)
                for n in rows:
                    x = torch.randn(n, n_filters)
                    products = {
                        "linear_ms": lambda x=x: layer(x),
                        "packed_ms": lambda x=x: packed.linear("highway", layer, x),
                    }
                    record = {
                        "benchmark": "char_cnn_linear",
                        "rows": n,
                        "features": n_filters,
                        "threads": count,
                        **{
                            name: round(1e3 * best_seconds(product, repeats, 20), 3)
                            for name, product in products.items()
                        },
                    }
                    records.append(record)
                    emit(record)
    finally:
        onednn.MIN_LINEAR_ROWS = default
    return records


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="paper", choices=sorted(CONFIGS))
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument(
        "--blocks", type=int, nargs="+", default=[0, 64, 128, 256, 512], help="0: all at once"
    )
    parser.add_argument("--precisions", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--linear-rows", type=int, nargs="+", help="time the products instead")
    parser.add_argument("--threads", type=int, nargs="+", default=[], help="for --linear-rows")
    args = parser.parse_args(argv)
    if args.linear_rows:
        return linear_records(args.config, args.linear_rows, args.threads, args.repeats)
    torch.manual_seed(0)
    bilm = BiLm(CONFIGS[args.config]).eval()
    batches = new_words(bilm, conll_dev_sentences(args.sentences))
    encoder = bilm.char_cnn
    records = []
    default = char_cnn.WORD_BLOCK
    try:
        for precision in args.precisions:
            if precision == "bfloat16" and missing_bfloat16_instructions():
                continue  # set_precision would run float32
            set_precision(bilm, precision)
            for block in args.blocks:
                char_cnn.WORD_BLOCK = block or max(len(words) for words in batches)
                with torch.no_grad():
                    seconds = {
                        part: best_seconds(functools.partial(each, f, batches), args.repeats)
                        for part, f in (
                            ("convolutions", encoder.convolve_words),
                            ("encoder", encoder.encode_words),
                        )
                    }
                record = {
                    "benchmark": "char_cnn_blocks",
                    "precision": precision,
                    "word_block": block,
                    "words": sum(len(words) for words in batches),
                    "threads": torch.get_num_threads(),
                    "convolutions_s": round(seconds["convolutions"], 3),
                    "encoder_s": round(seconds["encoder"], 3),
                }
                records.append(record)
                emit(record)
    finally:
        char_cnn.WORD_BLOCK = default
    return records


if __name__ == "__main__":
    main()
