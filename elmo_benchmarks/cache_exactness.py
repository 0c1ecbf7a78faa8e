"""The two measurements behind the caches' exactness design (docs/reliability.md):

1. whether a row of a matrix product keeps its bits when the product has another number of rows
   (it does not, so a vector cached from one batch equals a recomputation in another only up to
   float32 rounding, and `--recover` carries the caches instead);
2. what the word cache's exact staleness check costs: comparing the character CNN's weights with
   the copy taken when the cache filled, against a warm-cache forward pass at the paper size.

`python -m elmo_benchmarks.cache_exactness` (one thread; add the Makefile's AVX2 variables for the
other CPU kind's kernels); prints `BENCH {...}` lines.
"""

import json
import time

import torch

from elmo_benchmarks.common import DATA, random_bilm_tf
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.model.characters import batch_char_ids

ROWS = list(range(1, 33)) + [64, 127, 128, 129, 256, 512]


OPS = {
    "addmm": lambda x, w, b: torch.addmm(b, x, w),
    # the LSTM's products: both directions stacked (elmo_bilm.model.lstm)
    "baddbmm": lambda x, w, b: torch.baddbmm(b, torch.stack([x, x]), torch.stack([w, w]))[0],
}


def rows_with_other_bits(op: str, k: int, n: int) -> list:
    """Row counts M for which `op` over the first M rows differs from the same rows of a
    1,024-row product (K = k inputs, N = n outputs)."""
    torch.manual_seed(0)
    x, w, b = torch.randn(1024, k), torch.randn(k, n), torch.randn(n)
    full = OPS[op](x, w, b)
    return [m for m in ROWS if not torch.equal(OPS[op](x[:m], w, b), full[:m])]


def weight_check_cost() -> dict:
    bilm = load_bilm_tf(**random_bilm_tf("paper")).eval()
    blocks = (DATA / "conll2003" / "eng.testa").read_text().split("\n\n")[1:80]
    sentences = [
        [line.split()[0] for line in block.splitlines() if line and not line.startswith("-DOC")]
        for block in blocks
    ]
    ids = batch_char_ids([s for s in sentences if s][:32])
    with torch.no_grad():
        bilm(ids)  # warms the word cache
        start = time.perf_counter()
        for _ in range(3):
            bilm(ids)
        forward = (time.perf_counter() - start) / 3
        start = time.perf_counter()
        for _ in range(10):
            bilm.char_cnn._weights_unchanged()
        check = (time.perf_counter() - start) / 10
    return {"forward_ms": 1000 * forward, "check_ms": 1000 * check, "share": check / forward}


def main() -> None:
    torch.set_num_threads(1)
    for op in OPS:
        for k, n in ((64, 1024), (256, 4096)):
            rows = rows_with_other_bits(op, k, n)
            record = {"bench": "row_bits", "op": op, "k": k, "n": n, "rows_differing": rows}
            print("BENCH " + json.dumps(record))
    print("BENCH " + json.dumps({"bench": "word_cache_check", **weight_check_cost()}))


if __name__ == "__main__":
    main()
