"""One direction's input-to-gate product at the paper size (512 -> 16,384) over `--positions`
rows, in blocks of each `--rows` against all at once, at one thread, per precision: what the
block size of `elmo_bilm.model.lstm.InputBlocks` costs or saves in the product itself.

    python -m elmo_benchmarks.input_blocks --rows 128 256 512 1024 3072 --positions 3072

Prints one record per (precision, rows): the best of `--repeats` passes and its GFLOP/s.
"""

import argparse
import time
from typing import Any, Callable, Dict, List, Optional

import torch

from elmo_benchmarks.common import emit, threads_restored
from elmo_bilm.model import int8 as int8_products
from elmo_bilm.runtime.precision import Bf16Weight


def products(weight: torch.Tensor) -> Dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Each precision's product with `weight` (out, in), as its route prepares it."""
    packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), 1024)
    bf16 = Bf16Weight(weight, 1024)
    int8 = int8_products.pack(weight, torch.zeros(weight.shape[0]))
    return {
        "float32": lambda x: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], ""),
        "bfloat16": bf16.linear,
        "int8": lambda x: int8_products.linear(x, int8),
    }


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[128, 256, 512, 1024, 3072])
    parser.add_argument("--positions", type=int, default=3072)
    parser.add_argument("--inputs", type=int, default=512)
    parser.add_argument("--gates", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(args.gates, args.inputs, generator=generator) * 0.05
    x = torch.randn(args.positions, args.inputs, generator=generator)
    flops = 2.0 * args.positions * args.inputs * args.gates
    records = []
    with threads_restored():
        torch.set_num_threads(1)
        for precision, product in products(weight).items():
            for rows in args.rows:
                best = float("inf")
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    for first in range(0, args.positions, rows):
                        product(x[first : first + rows])
                    best = min(best, time.perf_counter() - start)
                record = {
                    "benchmark": "input_blocks",
                    "precision": precision,
                    "rows": rows,
                    "positions": args.positions,
                    "ms": round(best * 1e3, 2),
                    "gflops_per_s": round(flops / best / 1e9, 1),
                }
                records.append(record)
                emit(record)
    return records


if __name__ == "__main__":
    main()
