"""`make bench`: run every benchmark in its own process (so peak RSS is per configuration) and
print one table. Set ELMO_PLUGIN_BENCH_DEVICE=cuda to run the biLM sections on a GPU."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

DEVICE = os.environ.get("ELMO_PLUGIN_BENCH_DEVICE", "cpu")

RUNS = [
    ["elmo_benchmarks.bilm_forward", "--config", "small", "--batches", "8", "--device", DEVICE],
    ["elmo_benchmarks.bilm_forward", "--config", "paper", "--batches", "4", "--device", DEVICE],
    ["elmo_benchmarks.task_epoch", "--bilm", "shipped", "--sentences", "1000", "--epochs", "3"],
    ["elmo_benchmarks.task_epoch", "--bilm", "small", "--sentences", "1000", "--epochs", "3"],
    ["elmo_benchmarks.bilm_training", "--config", "small", "--batches", "4", "--device", DEVICE],
    ["elmo_benchmarks.bilm_training", "--config", "paper", "--batches", "2", "--device", DEVICE],
    ["elmo_benchmarks.shipped_bilm"],
    ["elmo_benchmarks.embed_cli"],
    ["elmo_benchmarks.embed_corpus"],
    ["elmo_benchmarks.precision", "--config", "small", "paper", "--sentences", "200"],
]


def run(module_args: List[str]) -> List[Dict[str, Any]]:
    result = subprocess.run([sys.executable, "-m", *module_args], capture_output=True, text=True)
    records = [
        json.loads(line[6:]) for line in result.stdout.splitlines() if line.startswith("BENCH ")
    ]
    if result.returncode != 0 or not records:
        print(f"FAILED: {' '.join(module_args)}\n{result.stderr[-2000:]}", file=sys.stderr)
    return records


def row(cells: List[Any]) -> str:
    """One markdown table row."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def main() -> None:
    records = [record for args in RUNS for record in run(args)]
    forward = [r for r in records if r["bench"] == "bilm_forward"]
    print("\n## biLM inference, all layers (CoNLL-2003 dev, batch 32, file order)")
    header = [
        "config",
        "device",
        "AllenNLP tok/s",
        "plugin tok/s",
        "ratio",
        "warm word cache tok/s",
    ]
    header += ["ratio", "max abs diff", "peak RSS MB", "plugin GFLOP/s", "matmul GFLOP/s"]
    header += ["fraction of matmul", "onnxruntime tok/s", "onnxruntime max abs diff"]
    print(row(header))
    print(row(["---", "---"] + ["---:"] * 12))
    for r in forward:
        cells = [r["config"], r["device"], f"{r['allennlp_tokens_per_s']:.0f}"]
        cells += [f"{r['plugin_tokens_per_s']:.0f}", f"{r['ratio']:.2f}x"]
        cells += [f"{r['plugin_warm_cache_tokens_per_s']:.0f}", f"{r['warm_cache_ratio']:.2f}x"]
        cells += [
            f"{r['max_abs_diff']:.1e}",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['plugin_gflops_per_s']:.1f}",
        ]
        cells += [f"{r['matmul_gflops_per_s']:.1f}", f"{r['fraction_of_matmul_peak']:.2f}"]
        if "onnxruntime_tokens_per_s" in r:
            cells += [
                f"{r['onnxruntime_tokens_per_s']:.0f}",
                f"{r['onnxruntime_max_abs_diff']:.1e}",
            ]
        else:
            cells += ["-", "-"]
        print(row(cells))
    for r in forward:
        for precision, p in r.get("precisions", {}).items():
            print(
                f"{r['config']}, {precision}: {p['tokens_per_s']:.0f} tok/s, "
                f"{p['gflops_per_s']:.1f} GFLOP/s, {p['fraction_of_matmul_peak']:.2f} of this "
                f"CPU's {precision} product rate ({p['matmul_gflops_per_s']:.1f} GFLOP/s)"
            )
    print(
        "\n## Task training with a frozen biLM (CoNLL-2003 biLSTM-CRF, 1000 train sentences, s/epoch)"
    )
    print(
        "| biLM | baseline (no ELMo) | ELMo uncached | ELMo cached | cached / baseline | uncached / baseline |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in (r for r in records if r["bench"] == "task_epoch"):
        e = r["epoch_seconds"]
        cells = [" / ".join(f"{t:.1f}" for t in e[v]) for v in ("baseline", "uncached", "cached")]
        ratios = [f"{r['cached_over_baseline']:.2f}x", f"{r['uncached_over_baseline']:.2f}x"]
        print(row([r["bilm"], *cells, *ratios]))
    print("(epochs listed in order; the ratios use the epochs after the first)")
    print("\n## biLM training (forward + backward + Adagrad, sampled softmax)")
    print("| config | device | batch | negatives | vocab | train tok/s | peak RSS MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in (r for r in records if r["bench"] == "bilm_training"):
        cells = [r["config"], r["device"], r["batch_size"], r["num_samples"], r["vocab"]]
        print(row([*cells, f"{r['train_tokens_per_s']:.0f}", f"{r['peak_rss_mb']:.0f}"]))
    for r in (r for r in records if r["bench"] == "shipped_bilm"):
        print(
            f"\n## Shipped small biLM\ndev perplexity (full softmax, {r['dev']}): {r['dev_perplexity']:.1f} "
            f"(forward {r['dev_perplexity_forward']:.1f}, backward {r['dev_perplexity_backward']:.1f})"
        )

    embed = [r for r in records if r["bench"] == "embed_cli"]
    if embed:
        print("\n## elmo-embed end to end (whole processes, one run)")
        print(row(["case", "command", "s", "x elmo-embed"]) + "\n" + row(["---"] * 4))
        for r in embed:
            print(row([r["case"], r["command"], r["seconds"], r["speed-up of elmo-embed"]]))
    for r in (r for r in records if r["bench"] == "embed_memory"):
        print(
            f"elmo-embed --layers top, {r['lines']} lines: {r['seconds']} s, peak RSS {r['peak_rss_mb']} MB"
        )

    corpus = [r for r in records if r["bench"] == "embed_corpus"]
    if corpus:
        print(
            "\n## elmo-embed-corpus on a local Ray against elmo-embed (WikiText test, one thread each)"
        )
        header = ["command", "tokens", "tok/s (wall)", "tok/s (workers busy)"]
        print(row([*header, "peak RSS MB per process", "output MB"]))
        print(row(["---", "---:", "---:", "---:", "---:", "---:"]))
        for r in corpus:
            rss = " / ".join(str(v) for v in r["peak_rss_mb"])
            cells = [r["command"], r["tokens"], r["tokens_per_s"]]
            cells += [r["embedding_tokens_per_s"] or "-", rss, r["output_mb"]]
            print(row(cells))

    precision = [r for r in records if r["bench"] == "precision"]
    if precision:
        print_precision(precision)


def print_precision(records: List[Dict[str, Any]]) -> None:
    """The table of `elmo_benchmarks.precision`: speed per thread count, error per layer."""
    first = records[0]
    print(
        f"\n## biLM inference by precision (CoNLL-2003 dev, {first['sentences']} sentences, "
        f"{first['tokens']} tokens, length-sorted batches, word cache emptied)"
    )
    threads = sorted({r["threads"] for r in records})
    layers = len(first["layers"])
    header = ["config", "precision"]
    header += [f"tok/s ({t} thr)" for t in threads] + [f"x float32 ({t} thr)" for t in threads]
    header += [f"layer {k} max abs / mean cos" for k in range(layers)]
    print(row(header))
    print(row(["---", "---"] + ["---:"] * (len(header) - 2)))
    by_key = {(r["config"], r["variant"], r["threads"]): r for r in records}
    for config, variant in dict.fromkeys((r["config"], r["variant"]) for r in records):
        speeds = [by_key.get((config, variant, t)) for t in threads]
        cells = [config, variant]
        cells += [f"{r['tokens_per_s']:.0f}" if r else "-" for r in speeds]
        cells += [f"{r['speed_up']:.2f}x" if r else "-" for r in speeds]
        errors = next(r for r in speeds if r)["layers"]
        cells += [f"{e['max_abs']:.1e} / {e['mean_cosine']:.6f}" for e in errors]
        print(row(cells))


if __name__ == "__main__":
    main()
