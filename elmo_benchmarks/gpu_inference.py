"""biLM inference on a lent GPU at the paper configuration, float32 against bfloat16, without
AllenNLP (the device takes one call's tree, and AllenNLP's wheels need several).

The paper-size biLM (4096 cells, 512 projection, 2,048 filters, 2 highways; bilm-tf's random
initial weights, seed 0) in float32 with TF32 off (the reference) and a copy under
`elmo_bilm.set_precision(bilm, "bfloat16")`, over CoNLL-2003 dev (all 3,250 sentences, or
`--repeat` copies of them for larger batches, sorted by length and cut into batches of
`--batch-sizes` sentences, the char CNN's word cache emptied before each batch, the character
ids on the GPU before the clock starts). The two alternate pass
by pass; each figure is the median of `--passes` timed passes after one warm-up. Also each
layer's error against float32 (mean and minimum cosine, max abs) and the peak GPU memory.

    python -m elmo_benchmarks.gpu_inference pack --out .devdata/inference.json       # here
    python -m elmo_benchmarks.gpu_inference run --data .devdata/inference.json         # on the GPU
"""

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.runtime.precision import set_precision


def pack(out: Path) -> None:
    """The paper configuration and CoNLL-2003 dev's sentences, for a machine without AllenNLP."""
    from elmo_benchmarks.common import CONFIGS, conll_dev_sentences

    record = {"options": CONFIGS["paper"], "sentences": conll_dev_sentences(10**9)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record))
    print(f"{out}: {len(record['sentences'])} sentences")


def _pass(bilm: BiLm, batches: List[torch.Tensor]) -> List[List[torch.Tensor]]:
    outputs = []
    for char_ids in batches:
        bilm.char_cnn.clear_word_cache()
        outputs.append(bilm(char_ids)["activations"])
    return outputs


def run(args: argparse.Namespace) -> List[Dict[str, Any]]:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    data = json.loads(Path(args.data).read_text())
    sentences = sorted(data["sentences"] * args.repeat, key=len)[: args.sentences]
    tokens = sum(len(s) for s in sentences)
    torch.manual_seed(0)
    reference = BiLm(data["options"]).to(device).eval()
    variants = {
        "float32": reference,
        "bfloat16": set_precision(copy.deepcopy(reference), "bfloat16"),
    }
    rows = []
    with torch.inference_mode():
        for batch_size in args.batch_sizes:
            batches = [
                batch_char_ids(sentences[i : i + batch_size]).to(device)
                for i in range(0, len(sentences), batch_size)
            ]
            times: Dict[str, List[float]] = {name: [] for name in variants}
            outputs = {}
            for repeat in range(args.passes + 1):  # the first is the warm-up
                for name, bilm in variants.items():
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                    start = time.perf_counter()
                    outputs[name] = _pass(bilm, batches)
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                    if repeat:
                        times[name].append(time.perf_counter() - start)
            errors = []
            masks = [(b > 0).any(-1) for b in batches]
            for layer in range(reference.num_layers):
                exact = torch.cat([o[layer][m] for o, m in zip(outputs["float32"], masks)])
                low = torch.cat([o[layer][m] for o, m in zip(outputs["bfloat16"], masks)])
                cosine = torch.nn.functional.cosine_similarity(exact, low.float(), dim=-1)
                errors.append(
                    {
                        "layer": layer,
                        "mean_cosine": float(cosine.mean()),
                        "min_cosine": float(cosine.min()),
                        "max_abs": float((exact - low.float()).abs().max()),
                    }
                )
            for name in variants:
                seconds = statistics.median(times[name])
                rows.append(
                    {
                        "batch_sentences": batch_size,
                        "precision": name,
                        "tokens": tokens,
                        "tokens_per_s": round(tokens / seconds),
                        "seconds": round(seconds, 4),
                        "all_seconds": [round(t, 4) for t in times[name]],
                        "errors": errors if name == "bfloat16" else None,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    record = {
        "command": " ".join(sys.argv),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "peak_gpu_gb": round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        if device.type == "cuda"
        else None,
        "rows": rows,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))
    print("| batch | precision | tokens/s | bf16 / fp32 | top-layer mean cosine |")
    for fp32, bf16 in zip(rows[::2], rows[1::2]):
        top = bf16["errors"][-1]["mean_cosine"]
        for row in (fp32, bf16):
            ratio = row["tokens_per_s"] / fp32["tokens_per_s"]
            cos = f"{top:.5f}" if row is bf16 else ""
            print(
                f"| {row['batch_sentences']} | {row['precision']} | {row['tokens_per_s']} | {ratio:.2f} | {cos} |"
            )
    return rows


def main(argv: Optional[List[str]] = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--device", default="cuda")
    r.add_argument("--batch-sizes", type=int, nargs="+", default=[256, 1024, 3250])
    r.add_argument("--passes", type=int, default=5)
    r.add_argument("--sentences", type=int, default=10**9)
    r.add_argument(
        "--repeat", type=int, default=1, help="the sentences this many times (larger batches)"
    )
    r.add_argument("--out")
    args = parser.parse_args(argv)
    if args.command == "pack":
        return pack(args.out)
    return run(args)


if __name__ == "__main__":
    main()
