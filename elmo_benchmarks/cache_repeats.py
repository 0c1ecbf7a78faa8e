"""The biLM's work in a first pass over SQuAD with the activation cache: every question's instance
holds its paragraph, and the evaluation batches (bucketed by passage length, no padding noise) put
a paragraph's questions together, so one batch holds the same passage several times (training
batches, with padding noise, mostly mix paragraphs). The cache runs each distinct sentence of a
batch through the biLM once; this counts what that saves over computing every row not cached yet,
and times the cached path against the uncached one over the same batches.

`python -m elmo_benchmarks.cache_repeats [--split validation] [--batches N]` (one thread;
`$ELMO_PLUGIN_DATA` as for the configs; the SQuAD config's reader, data slice, bucketing and batch
size of the split; the biLM of `--options-file`); prints one `BENCH {...}` line.
"""

import argparse
import random
import time
from itertools import islice
from typing import Any, Dict, Optional

import torch
from allennlp.common import Params
from allennlp.data import DataLoader, DatasetReader, Vocabulary

import elmo_plugin  # noqa: F401  (registers the reader; `Params.from_file` gets the defaults)
from elmo_benchmarks.common import emit
from elmo_plugin.analysis import table1
from elmo_plugin.modules.bilm_loading import load_bilm_or_archive
from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.elmo_options import ElmoOptions


def measure(split: str, batches: int, options_file: Optional[str]) -> Dict[str, Any]:
    params = Params.from_file(str(table1.CONFIG_DIR / table1.TASKS["squad"].config))
    prefix = "" if split == "train" else "validation_"
    reader_params = params.pop(f"{prefix}dataset_reader")
    reader_params["token_indexers"] = {"elmo": {"type": "elmo_characters"}}  # what the biLM reads
    reader = DatasetReader.from_params(reader_params)
    loader = DataLoader.from_params(
        params.pop(f"{prefix}data_loader"),
        reader=reader,
        data_path=params.pop(f"{split}_data_path"),
    )
    loader.index_with(Vocabulary())
    cached = ElmoRepresentations(ElmoOptions(dropout=0.0), bilm=load_bilm_or_archive(options_file))
    uncached = ElmoRepresentations(
        ElmoOptions(dropout=0.0, cache_activations=False),
        bilm=load_bilm_or_archive(options_file),
    )
    cache = cached.cache
    assert cache is not None
    computed = []  # tokens of each sentence the cached path runs through the biLM
    cached.bilm.register_forward_hook(
        lambda module, inputs, output: computed.extend((inputs[0] > 0).any(-1).sum(-1).tolist())
    )
    rows = tokens = 0
    seconds = {"cached": 0.0, "uncached": 0.0}
    random.seed(0)  # the bucket sampler's shuffling
    for batch in islice(iter(loader), batches):
        fields: Dict[str, Any] = batch  # a TextField's tensors are nested dicts
        for field in ("passage", "question"):
            ids = fields[field]["elmo"]["elmo_tokens"]
            lengths = (ids > 0).any(-1).sum(-1)
            rows += ids.shape[0]
            tokens += int(lengths.sum())
            start = time.perf_counter()
            with torch.no_grad():
                cached.bilm_layers(ids)
            seconds["cached"] += time.perf_counter() - start
            start = time.perf_counter()
            with torch.no_grad():
                uncached.bilm_layers(ids)
            seconds["uncached"] += time.perf_counter() - start
    return {
        "bench": "cache_repeats",
        "split": split,
        "options_file": options_file,
        "batches": batches,
        "rows": rows,
        "tokens": tokens,
        "bilm_rows": cache.misses,
        "repeats_in_batch": cache.repeats,
        "hits": cache.hits,
        "rows_computed_without_dedup": cache.misses + cache.repeats,
        "bilm_tokens": sum(computed),
        "seconds_cached": round(seconds["cached"], 2),
        "seconds_uncached": round(seconds["uncached"], 2),
        "uncached_over_cached": round(seconds["uncached"] / seconds["cached"], 2),
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "validation"], default="train")
    parser.add_argument("--batches", type=int, default=20, help="the epoch's first N batches")
    parser.add_argument(
        "--options-file", help="a biLM's options file or name (default: the shipped biLM)"
    )
    args = parser.parse_args()
    emit(measure(args.split, args.batches, args.options_file))


if __name__ == "__main__":
    main()
