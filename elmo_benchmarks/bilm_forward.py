"""biLM inference, all layers: AllenNLP's `_ElmoBiLm`, the plugin's `BiLm` and the biLM exported
to ONNX (`elmo_bilm.runtime.onnx`) in onnxruntime, side by side.

Same random bilm-tf weights, same CoNLL-2003 dev sentences in file order, same batch size and
threads. AllenNLP's state is reset before every batch so both compute the same thing. The plugin
is timed twice: with its char-CNN word cache emptied first (a first pass over the text: the
headline figure) and again with every word cached; then once in each lower precision the CPU
runs natively, each as a fraction of the machine's product rate in that precision
(`precision_figures`). onnxruntime runs with as many intra-op threads as torch.
"""

import argparse
import os
import tempfile
from unittest import mock

import torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids
from torch.utils.flop_counter import FlopCounterMode

from elmo_benchmarks.common import conll_dev_sentences, emit, peak_rss_mb, random_bilm_tf, timed
from elmo_bilm.formats.bilm_tf import load_bilm_tf
from elmo_bilm.model import onednn, routes
from elmo_bilm.runtime.onnx import export_onnx
from elmo_bilm.runtime.precision import missing_bfloat16_instructions, set_precision


def matmul_peak(
    device: torch.device, size: int = 2048, repeats: int = 10, dtype: torch.dtype = torch.float32
) -> float:
    """FLOP/s of a large matmul in `dtype` on this machine: the practical ceiling for the biLM."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    a @ b

    def work() -> None:
        for _ in range(repeats):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()

    return 2 * size**3 * repeats / timed(work)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=["small", "paper"], default="small")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    files = random_bilm_tf(args.config)
    sentences = conll_dev_sentences(args.batch_size * (args.batches + 1))
    batches = [
        batch_to_ids(sentences[i : i + args.batch_size]).to(device)
        for i in range(0, len(sentences), args.batch_size)
    ]
    warmup, batches = batches[0], batches[1:]
    tokens = sum(int((b > 0).any(-1).sum()) for b in batches)

    reference = _ElmoBiLm(files["options_file"], files["weight_file"]).to(device).eval()
    ours = load_bilm_tf(files["options_file"], files["weight_file"]).to(device).eval()
    max_diff = 0.0
    with torch.no_grad():
        for batch in [warmup] + batches:  # correctness on every batch, untimed
            reference._elmo_lstm.reset_states()
            expected = reference(batch)
            got = ours(batch, keep_sentence_boundaries=True)
            mask = expected["mask"][..., None]
            for a, b in zip(expected["activations"], got["activations"]):
                max_diff = max(max_diff, float(((a - b).abs() * mask).max()))

        def run_reference() -> None:
            for batch in batches:
                reference._elmo_lstm.reset_states()
                reference(batch)
            if device.type == "cuda":
                torch.cuda.synchronize()

        def run_ours() -> None:
            for batch in batches:
                ours(batch)
            if device.type == "cuda":
                torch.cuda.synchronize()

        def run_ours_first_pass() -> None:
            ours.char_cnn.clear_word_cache()  # every word's char CNN runs, as on unseen text
            run_ours()

        run_reference() if args.config == "small" else None  # warm-up (the paper model is slow)
        run_ours()
        reference_s = timed(run_reference)
        ours_s = timed(run_ours_first_pass)
        ours_warm_s = timed(run_ours)  # every word's vector already in the word cache
        # FlopCounterMode does not see oneDNN's packed products: count the same arithmetic on
        # the bmm path (identical products, untimed)
        with (
            FlopCounterMode(display=False) as counter,
            mock.patch.object(onednn, "AVAILABLE", False),
        ):
            run_ours_first_pass()
        matmul_flops_per_s = matmul_peak(device)
        flops = counter.get_total_flops()
        precisions = precision_figures(ours, batches, flops) if device.type == "cpu" else {}
    onnx = onnxruntime_figures(ours, [warmup] + batches) if device.type == "cpu" else {}
    plugin_flops_per_s = counter.get_total_flops() / ours_s
    emit(
        {
            "bench": "bilm_forward",
            "config": args.config,
            "device": str(device),
            "threads": torch.get_num_threads(),
            "batch_size": args.batch_size,
            "tokens": tokens,
            "allennlp_tokens_per_s": tokens / reference_s,
            "plugin_tokens_per_s": tokens / ours_s,
            "ratio": reference_s / ours_s,
            "plugin_warm_cache_tokens_per_s": tokens / ours_warm_s,
            "warm_cache_ratio": reference_s / ours_warm_s,
            "max_abs_diff": max_diff,
            "peak_rss_mb": peak_rss_mb(),
            "plugin_gflops_per_s": plugin_flops_per_s / 1e9,
            "matmul_gflops_per_s": matmul_flops_per_s / 1e9,
            "fraction_of_matmul_peak": plugin_flops_per_s / matmul_flops_per_s,
            "precisions": precisions,
            **(
                {
                    "onnxruntime_tokens_per_s": tokens / onnx["seconds"],
                    "onnxruntime_max_abs_diff": onnx["max_abs_diff"],
                }
                if onnx
                else {}
            ),
        }
    )


def precision_figures(bilm: torch.nn.Module, batches: list, flops: float) -> dict:
    """For each lower precision this CPU runs natively (`set_precision`; bfloat16 needs AVX-512
    BF16 or AMX): a first pass over `batches` (word cache emptied) in it, after one untimed pass
    (the routes timed, the packs made), and its rate as a fraction of this machine's own product
    rate in that precision: a 2048 x 2048 bfloat16 matmul, the faster int8 route's 2048 x 2048
    product. `flops`: the float32 pass's count (the same arithmetic). The biLM is left in
    float32."""
    figures = {}
    for precision in ("bfloat16", "int8"):
        if precision == "bfloat16" and missing_bfloat16_instructions() is not None:
            continue
        set_precision(bilm, precision)
        with torch.no_grad():
            for batch in batches:
                bilm(batch)
            bilm.char_cnn.clear_word_cache()

            def run() -> None:
                for batch in batches:
                    bilm(batch)

            seconds = timed(run)
        if precision == "bfloat16":
            peak = matmul_peak(torch.device("cpu"), dtype=torch.bfloat16)
        else:
            size = 2048
            best = min(
                routes.time_route("int8", r, size, size, size) for r in routes.available("int8")
            )
            peak = 2 * size**3 / best
        figures[precision] = {
            "tokens_per_s": sum(int((b > 0).any(-1).sum()) for b in batches) / seconds,
            "gflops_per_s": flops / seconds / 1e9,
            "matmul_gflops_per_s": peak / 1e9,
            "fraction_of_matmul_peak": flops / seconds / peak,
        }
    set_precision(bilm, "float32")
    return figures


def onnxruntime_figures(bilm: torch.nn.Module, batches: list) -> dict:
    """The biLM exported to ONNX, in onnxruntime on the CPU: seconds for `batches[1:]` (the first
    is the warm-up) and the largest difference from `bilm` over all of them."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bilm.onnx")
        export_onnx(bilm, path)
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = [batch.cpu().numpy() for batch in batches]
    max_diff = 0.0
    with torch.no_grad():
        for batch, ids in zip(batches, inputs):
            expected = torch.stack(bilm(batch)["activations"]).numpy()
            max_diff = max(
                max_diff, float(abs(session.run(None, {"char_ids": ids})[0] - expected).max())
            )

    def run() -> None:
        for ids in inputs[1:]:
            session.run(None, {"char_ids": ids})

    return {"seconds": timed(run), "max_abs_diff": max_diff}


if __name__ == "__main__":
    main()
