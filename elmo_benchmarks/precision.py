"""biLM inference in float32, bfloat16 and int8 (`elmo_bilm.runtime.precision`): tokens/s at 1 and 2
threads and each layer's error against float32 (max abs, mean and min cosine over the tokens),
all variants of a biLM alternating in one process so that they see the same machine load.

CoNLL-2003 dev sentences in file order, sorted by length into batches of `--batch-size` (as
`elmo-embed` does), the variants alternating batch by batch, the char CNN's word cache emptied
before each batch (every word through the CNN). `--variants` adds the alternatives measured to
choose the defaults: bfloat16 with a bfloat16 LSTM cell state or a float32 recurrent product,
int8 with the recurrent product in bfloat16 or float32, and `torch.autocast` around a float32
biLM. `--force` runs bfloat16 without the CPU check (to time it where the CPU lacks the
instructions, e.g. under `ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2`). `--products` times
the paper configuration's single products instead, `--pos-probe N` the Section 5 POS probe's
accuracy per layer in each precision, `--ner-archive` a trained NER tagger's dev F1 with its biLM
in each precision, `--onnx` the exported biLM in onnxruntime against its int8
quantization.
"""

import argparse
import contextlib
import statistics
import time
from typing import Callable, ContextManager, Dict, List, Tuple

import torch

from elmo_benchmarks.common import conll_dev_sentences, emit, kernels, random_bilm_tf
from elmo_bilm.model.bilm import BiLm
from elmo_bilm.model.characters import batch_char_ids
from elmo_bilm.runtime.precision import INT8_RECURRENT, _prepare, set_precision
from elmo_bilm.sources.resolver import load_bilm

# name -> (precision, recurrent product, cell state dtype, context around the pass)
Variant = Tuple[str, str, torch.dtype, Callable[[], ContextManager]]
F32, NONE = torch.float32, contextlib.nullcontext
VARIANTS: Dict[str, Variant] = {
    "float32": ("float32", "float32", F32, NONE),
    "bfloat16": ("bfloat16", "bfloat16", F32, NONE),
    "int8": ("int8", INT8_RECURRENT, F32, NONE),
}
EXTRA: Dict[str, Variant] = {
    "bfloat16, bfloat16 cell state": ("bfloat16", "bfloat16", torch.bfloat16, NONE),
    "bfloat16, recurrent float32": ("bfloat16", "float32", F32, NONE),
    "bfloat16, recurrent int8": ("bfloat16", "int8", F32, NONE),
    "int8, recurrent bfloat16": ("int8", "bfloat16", F32, NONE),
    "int8, recurrent float32": ("int8", "float32", F32, NONE),
    "autocast bfloat16": (
        "float32",
        "float32",
        F32,
        lambda: torch.autocast("cpu", dtype=torch.bfloat16),
    ),
}


def load(config: str) -> BiLm:
    if config == "shipped":
        return load_bilm().eval()
    files = random_bilm_tf(config)
    return load_bilm(files["options_file"], files["weight_file"]).eval()


def prepared(bilm: BiLm, variant: Variant, force: bool) -> Callable[[], None]:
    """Set `variant`'s precision on `bilm`; returns what sets it again later with the same
    derived weights (casts and packs are made once, not timed at every switch)."""
    precision, recurrent, cell_dtype, _ = variant
    if variant == VARIANTS[precision] and not force:
        set_precision(bilm, precision)  # the public path, with its CPU check
    else:
        _prepare(bilm, precision, recurrent, cell_dtype)
    cnn = bilm.char_cnn
    highways = [(h.transform, h.carry) for h in cnn.highway_layers()]
    saved = (bilm.lstm.products, cnn.projection, cnn.convolutions, cnn.precision)

    def restore() -> None:
        bilm.lstm.products, cnn.projection, cnn.convolutions, cnn.precision = saved
        for highway, (transform, carry) in zip(cnn.highway_layers(), highways):
            highway.transform, highway.carry = transform, carry

    return restore


def run_batch(
    bilm: BiLm, batch: torch.Tensor, variant: Variant
) -> Tuple[float, List[torch.Tensor]]:
    """Seconds of one batch with the word cache emptied first, and its layers."""
    bilm.char_cnn.clear_word_cache()
    with torch.no_grad(), variant[3]():
        start = time.perf_counter()
        layers = bilm(batch)["activations"]
        return time.perf_counter() - start, layers


def errors(
    got: List[List[torch.Tensor]], expected: List[List[torch.Tensor]], masks: List[torch.Tensor]
) -> List[Dict[str, float]]:
    """Per layer: max abs difference, mean and min cosine of the token vectors."""
    result = []
    for layer in range(len(expected[0])):
        a = torch.cat([g[layer][m] for g, m in zip(got, masks)]).double()
        b = torch.cat([e[layer][m] for e, m in zip(expected, masks)]).double()
        cosine = torch.nn.functional.cosine_similarity(a, b, dim=-1)
        result.append(
            {
                "max_abs": float((a - b).abs().max()),
                "scale": float(b.abs().max()),
                "mean_cosine": float(cosine.mean()),
                "min_cosine": float(cosine.min()),
            }
        )
    return result


PRODUCT_SHAPES = (  # (rows, in, out): the paper configuration's products
    (2048, 512, 16384),  # input-to-gate, a batch's positions at once
    (128, 512, 16384),  # recurrent, 128 sentences running
    (16, 512, 16384),  # recurrent, in a batch's tail
    (128, 4096, 512),  # projection
)


def product_row(rows: int, n_in: int, n_out: int, repeats: int) -> str:
    """One row of `products`: medians of `repeats` calls of each kind, alternating call by call,
    and the largest error of bfloat16 and int8 relative to the largest exact value."""
    from elmo_bilm.model import int8 as int8_products
    from elmo_bilm.runtime.precision import Bf16Weight

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, n_in, generator=generator)
    w = torch.randn(n_out, n_in, generator=generator) * n_in**-0.5
    packed = torch.ops.mkldnn._reorder_linear_weight(w, rows)
    w16, w8 = Bf16Weight(w, rows), int8_products.pack(w, None)
    linear = torch.ops.mkldnn._linear_pointwise
    kinds: Dict[str, Callable[[], torch.Tensor]] = {
        "mm": lambda: x @ w.T,
        "packed": lambda: linear(x, packed, None, "none", [], ""),
        "bf16": lambda: w16.linear(x).float(),
        "int8": lambda: int8_products.linear(x, w8),
    }
    exact = (x.double() @ w.double().T).float()
    times: Dict[str, List[float]] = {kind: [] for kind in kinds}
    for run in kinds.values():
        run()
    for _ in range(repeats):
        for kind, run in kinds.items():
            start = time.perf_counter()
            run()
            times[kind].append(1000 * (time.perf_counter() - start))
    ms = [f"{statistics.median(times[kind]):.2f}" for kind in kinds]
    err = [float((kinds[k]() - exact).abs().max() / exact.abs().max()) for k in ("bf16", "int8")]
    return f"| {rows} x {n_in} -> {n_out} | {' | '.join(ms)} | {err[0]:.1e} | {err[1]:.1e} |"


def products(repeats: int) -> None:
    """Milliseconds of the paper configuration's single products (one direction)."""
    print(
        "| rows x in -> out | float32 mm | float32 oneDNN packed | bfloat16 | int8 "
        "| bfloat16 error | int8 error |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for shape in PRODUCT_SHAPES:
        print(product_row(*shape, repeats), flush=True)


def pos_probes(train_sentences: int, bilm_name: "str | None") -> None:
    """The POS probe's accuracy per layer with the biLM in each precision (one seed: the
    probe's training is seeded, so the precisions differ only by their features)."""
    from elmo_benchmarks.common import DATA
    from elmo_plugin.analysis.probes import pos_probe

    folder = DATA / "ud_english_ewt"
    print("| precision | accuracy per layer | difference from float32 (points) |")
    print("| --- | --- | --- |")
    reference = None
    for name in VARIANTS:
        bilm = set_precision(load_bilm(bilm_name).eval(), name)
        result = pos_probe(
            bilm,
            str(folder / "en_ewt-ud-train.conllu"),
            str(folder / "en_ewt-ud-dev.conllu"),
            max_train_sentences=train_sentences,
        )
        accuracy = result["accuracy_per_layer"]
        reference = reference or accuracy
        cells = " / ".join(f"{100 * a:.2f}" for a in accuracy)
        diffs = " / ".join(f"{100 * (a - r):+.2f}" for a, r in zip(accuracy, reference))
        print(f"| {name} | {cells} | {diffs} |", flush=True)
        emit({"bench": "precision_pos", "precision": name, **result})


def ner_f1(archive_file: str, dev: "str | None") -> None:
    """Dev F1 of a trained tagger (`conll2003_crf_tagger_elmo`'s archive) with its biLM switched
    to each precision; the rest of the model (and its dropout-free evaluation) as trained."""
    from allennlp.data.data_loaders import MultiProcessDataLoader
    from allennlp.models.archival import load_archive
    from allennlp.training.util import evaluate

    import elmo_plugin  # noqa: F401  (registers the archive's components)

    archive = load_archive(archive_file)
    model = archive.model.eval()
    bilms = [module for module in model.modules() if isinstance(module, BiLm)]
    if not bilms:
        raise SystemExit(f"{archive_file}: no biLM in the model")
    config = archive.config
    dev = dev or config["validation_data_path"]
    loader = MultiProcessDataLoader(
        archive.validation_dataset_reader, dev, batch_size=64, shuffle=False
    )
    loader.index_with(model.vocab)
    print("| precision | dev F1 | difference from float32 (points) |")
    print("| --- | ---: | ---: |")
    reference = None
    for name in VARIANTS:
        for bilm in bilms:
            set_precision(bilm, name)
        with torch.no_grad():
            f1 = evaluate(model, loader)["f1-measure-overall"]
        reference = f1 if reference is None else reference
        print(f"| {name} | {100 * f1:.2f} | {100 * (f1 - reference):+.2f} |", flush=True)
        emit(
            {
                "bench": "precision_ner",
                "precision": name,
                "archive": archive_file,
                "dev": dev,
                "f1": f1,
                "kernels": kernels(),
            }
        )


def onnx_int8(config: str, batches: List[torch.Tensor], rounds: int, threads: int) -> None:
    """onnxruntime: the exported float32 biLM against its int8 quantization (`elmo-export-onnx
    --quantize int8`), alternating batch by batch; errors of the int8 model's layers."""
    import tempfile

    import onnxruntime

    from elmo_bilm.runtime.onnx import export_onnx, quantize_onnx

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    with tempfile.TemporaryDirectory() as folder:  # a session reads its file when made
        export_onnx(load(config), f"{folder}/float32.onnx")
        quantize_onnx(f"{folder}/float32.onnx", f"{folder}/int8.onnx")
        sessions = {
            name: onnxruntime.InferenceSession(
                f"{folder}/{name}.onnx", options, providers=["CPUExecutionProvider"]
            )
            for name in ("float32", "int8")
        }
    times: Dict[str, List[float]] = {name: [] for name in sessions}
    outputs: Dict[str, List[List[torch.Tensor]]] = {name: [] for name in sessions}
    for _ in range(rounds):
        for name in sessions:
            times[name].append(0.0)
        for batch in batches:
            for name, session in sessions.items():
                start = time.perf_counter()
                layers = session.run(None, {"char_ids": batch.numpy()})[0]
                times[name][-1] += time.perf_counter() - start
                if len(outputs[name]) < len(batches):
                    outputs[name].append(list(torch.from_numpy(layers)))
    masks = [(b > 0).any(-1) for b in batches]
    tokens = sum(int(m.sum()) for m in masks)
    for name in sessions:
        ratios = [b / s for b, s in zip(times["float32"], times[name])]
        emit(
            {
                "bench": "precision_onnx",
                "config": config,
                "variant": f"onnxruntime {name}",
                "threads": threads,
                "tokens": tokens,
                "tokens_per_s": tokens / statistics.median(times[name]),
                "speed_up": statistics.median(ratios),
                "seconds": times[name],
                "layers": errors(outputs[name], outputs["float32"], masks),
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="+", default=["small", "paper"])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the batches")
    parser.add_argument("--variants", action="store_true", help="also the alternatives")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="of those, only these (and float32)"
    )
    parser.add_argument("--force", action="store_true", help="bfloat16 without the CPU check")
    parser.add_argument(
        "--products", action="store_true", help="only time single products (threads: the first)"
    )
    parser.add_argument(
        "--pos-probe",
        type=int,
        metavar="N",
        help="only the Section 5 POS probe (UD English EWT, the first N training sentences, the "
        "dev set) of each precision, with the biLM of --bilm",
    )
    parser.add_argument("--bilm", help="for --pos-probe: a biLM's name (default: the shipped one)")
    parser.add_argument(
        "--ner-archive",
        metavar="MODEL_TAR_GZ",
        help="only the dev F1 of this trained tagger with its biLM in each precision",
    )
    parser.add_argument("--ner-dev", help="for --ner-archive: another dev file than the config's")
    parser.add_argument(
        "--onnx", action="store_true", help="only onnxruntime: float32 against --quantize int8"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads[0])
    if args.products:
        products(max(5, 4 * args.rounds))
        return
    if args.pos_probe:
        pos_probes(args.pos_probe, args.bilm)
        return
    if args.ner_archive:
        ner_f1(args.ner_archive, args.ner_dev)
        return
    variants = {**VARIANTS, **(EXTRA if args.variants else {})}
    if args.only:
        variants = {k: v for k, v in variants.items() if k == "float32" or k in args.only}
    sentences = sorted(conll_dev_sentences(args.sentences), key=len)
    batches = [
        batch_char_ids(sentences[i : i + args.batch_size])
        for i in range(0, len(sentences), args.batch_size)
    ]
    masks = [(b > 0).any(-1) for b in batches]
    tokens = sum(int(m.sum()) for m in masks)
    if args.onnx:
        for config in args.config:
            onnx_int8(config, batches, args.rounds, args.threads[0])
        return
    for config in args.config:
        bilm = load(config)
        setters = {name: prepared(bilm, variant, args.force) for name, variant in variants.items()}
        for name, variant in variants.items():  # warm-up: packs and casts are made on first use
            setters[name]()
            run_batch(bilm, batches[0], variant)
        # per (variant, threads): seconds of each round; the variants alternate batch by batch,
        # so that a burst of load on this shared machine hits all of them alike
        times: Dict[Tuple[str, int], List[float]] = {}
        outputs: Dict[str, List[List[torch.Tensor]]] = {name: [] for name in variants}
        for threads in args.threads:  # one thread count at a time: the pool stays as it is
            torch.set_num_threads(threads)
            for _ in range(args.rounds):
                for name in variants:
                    times.setdefault((name, threads), []).append(0.0)
                for batch in batches:
                    for name, variant in variants.items():
                        setters[name]()
                        seconds, layers = run_batch(bilm, batch, variant)
                        times[(name, threads)][-1] += seconds
                        if len(outputs[name]) < len(batches):
                            outputs[name].append(layers)
        for (name, threads), seconds in times.items():
            base = times[("float32", threads)]  # ratios within a round: the load drifts
            emit(
                {
                    "bench": "precision",
                    "config": config,
                    "variant": name,
                    "threads": threads,
                    "sentences": len(sentences),
                    "tokens": tokens,
                    "tokens_per_s": tokens / statistics.median(seconds),
                    "speed_up": statistics.median(b / s for b, s in zip(base, seconds)),
                    "seconds": seconds,
                    "layers": errors(outputs[name], outputs["float32"], masks),
                    "kernels": kernels(),
                }
            )


if __name__ == "__main__":
    main()
