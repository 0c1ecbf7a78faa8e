"""The LSTM step's pointwise work at the paper size (4,096 cells): the eager ops
(`elmo_bilm.model.lstm.lstm_cell`) at each thread count against the compiled loop
(`elmo_bilm.model.fused_cell`, one thread), alternated in one process, at a step's row counts:

    python -m elmo_benchmarks.fused_cell --rows 8 32 128 --threads 1 2

Prints one record per (gates dtype, rows): the best of `--repeats` timings of each, in ms.
"""

import argparse
import timeit
from typing import Any, Dict, List, Optional

import torch

from elmo_benchmarks.common import emit, threads_restored
from elmo_bilm.model import fused_cell, lstm


def time_ms(cell: Any, gates: torch.Tensor, c: torch.Tensor, number: int, repeats: int) -> float:
    """The best of `repeats` timings of `number` calls of `cell(gates, c, 3.0)`, ms a call."""
    seconds = timeit.repeat(lambda: cell(gates, c, 3.0), number=number, repeat=repeats)
    return round(min(seconds) / number * 1e3, 4)


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--number", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    generator = torch.Generator().manual_seed(0)
    records = []
    with threads_restored():
        for dtype in (torch.float32, torch.bfloat16):
            for rows in args.rows:
                gates = (torch.randn(rows, 4 * args.dim, generator=generator) * 3).to(dtype)
                c = torch.randn(rows, args.dim, generator=generator) * 2
                record: Dict[str, Any] = {
                    "benchmark": "fused_cell",
                    "gates": str(dtype).removeprefix("torch."),
                    "rows": rows,
                    "dim": args.dim,
                }
                torch.set_num_threads(1)
                if fused_cell.lstm_cell(gates, c, 3.0) is None:
                    record["fused_ms"] = None  # not built here
                else:
                    record["fused_ms"] = time_ms(
                        fused_cell.lstm_cell, gates, c, args.number, args.repeats
                    )
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    record[f"eager_{threads}_threads_ms"] = time_ms(
                        lstm.lstm_cell, gates, c, args.number, args.repeats
                    )
                records.append(record)
                emit(record)
    return records


if __name__ == "__main__":
    main()
