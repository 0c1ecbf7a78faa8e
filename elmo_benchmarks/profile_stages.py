"""Where the biLM's inference time goes, stage by stage (issue 70 item 1): a profile to read
before changing anything.

The biLM (by default the paper size, `elmo_benchmarks.common.random_bilm_tf("paper")`) runs the first
`--sentences` CoNLL-2003 dev sentences in length-sorted batches of `--batch-size`, as
`elmo_benchmarks.precision` does, with the char CNN's word cache emptied before each pass (a first
pass over the text, as `make bench`'s headline figure). For each thread count: a warm-up pass,
a plain timed pass, then a pass with every stage wrapped from the outside (the `elmo_bilm`
functions are replaced by timing wrappers for the pass only; no code of the package changes)
that splits the forward's time into the stages below, each counted without the stages nested
in it. The shares are of that instrumented forward. On the `bmm` path (what `FlopCounterMode`
sees, as in `elmo_benchmarks.bilm_forward`) the same pass gives the FLOPs, hence the matrix-product
rate fraction as `make bench` defines it: the forward's FLOP/s over a 2048 x 2048 float32
matmul's, measured in the same run.

Start-up (process start to the first batch: the interpreter, importing torch and `elmo_bilm`,
loading the weights) and the first, cold batch (oneDNN packs the weights in it) are reported
separately: they are not part of the forward's shares.

`--trace FILE` also writes a `torch.profiler` Chrome trace of one instrumented pass, with the
stages as `record_function` labels.
"""

import os
import time

# the process's age now: the interpreter's own start-up counts too (Linux: /proc; else 0)


def _process_age() -> float:
    """Seconds since this process started, from /proc (0.0 where there is none)."""
    try:
        with open("/proc/self/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


_AGE_AT_START = _process_age()
_CLOCK_AT_START = time.perf_counter()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
from collections import defaultdict  # noqa: E402
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple  # noqa: E402
from unittest import mock  # noqa: E402

import torch  # noqa: E402

from elmo_bilm.model import bilm as bilm_module  # noqa: E402
from elmo_bilm.model import derived, onednn  # noqa: E402
from elmo_bilm.model import lstm as lstm_module  # noqa: E402
from elmo_bilm.model.bilm import BiLm  # noqa: E402
from elmo_bilm.model.char_cnn import CharCnnEncoder  # noqa: E402
from elmo_bilm.model.characters import batch_char_ids  # noqa: E402
from elmo_bilm.model.lstm import InputBlocks, ProjectedLstmStack, _Packing  # noqa: E402
from elmo_bilm.runtime.precision import PRECISIONS, set_precision  # noqa: E402
from elmo_bilm.sources.resolver import load_bilm  # noqa: E402

_IMPORTED = time.perf_counter()

# The stages, in the order of the table. Each one's time excludes the stages nested in it.
STAGES = [
    ("char CNN: convolutions, highways, projection", "encode_words, distinct words only"),
    ("char CNN: distinct words, word cache, scatter", "torch.unique, cache look-ups, tokens"),
    ("input products", "by blocks of steps (distinct words: at once), + bias"),
    ("packed-weight checks", "derived.DerivedCopies.get: fingerprints each pack's weights"),
    ("step: recurrent products", "h_{t-1} W_h + input gates, per step and direction"),
    ("step: gates + cell clip", "lstm_cell: sigmoid/tanh, c update, clip"),
    ("step: projection products", "P m, per step and direction"),
    ("step: projection clip", "clamp of h_t"),
    ("step loop: rest", "_recurrence's slicing, Python loop, cat of the outputs"),
    ("packing", "_Packing: sort, pack, reverse; first layer's gather by word"),
    ("output", "unpack to (batch, T, dim), boundaries removed"),
    ("other", "boundaries added, residuals, routing, token layer, rest of forward"),
]
ROW_BUCKETS = [(1, 8), (9, 16), (17, 32), (33, 1 << 30)]


class StageTimer:
    """Wall time per stage, each stage's own (its nested stages' time subtracted), plus the FLOPs
    of the product stages and the step products' time by the number of rows running."""

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = defaultdict(float)
        self.flops: Dict[str, float] = defaultdict(float)
        self.by_rows: Dict[Tuple[int, int], List[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self._stack: List[List[Any]] = []  # [name, time of nested stages]

    @property
    def current(self) -> Optional[str]:
        return self._stack[-1][0] if self._stack else None

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self._stack.append([name, 0.0])
        start = time.perf_counter()
        try:
            with torch.profiler.record_function(name):
                yield
        finally:
            elapsed = time.perf_counter() - start
            _, nested = self._stack.pop()
            self.seconds[name] += elapsed - nested
            if self._stack:
                self._stack[-1][1] += elapsed

    def product(self, name: str, function: Callable, rows: int, n_in: int) -> Any:
        """Run one product stage (`rows` running rows per direction, `n_in` inputs), counting
        `2 n_in` FLOPs per output element."""
        start = time.perf_counter()
        with self.stage(name):
            out = function()
        outputs = out if isinstance(out, (list, tuple)) else [out]
        flops = sum(2.0 * n_in * o.numel() for o in outputs)
        self.flops[name] += flops
        if name.startswith("step:"):
            bucket = next(b for b in ROW_BUCKETS if b[0] <= rows <= b[1])
            record = self.by_rows[bucket]
            record[0] += 1
            record[1] += time.perf_counter() - start
            record[2] += flops
        return out


def _wrap(timer: StageTimer, owner: Any, name: str, stage: str) -> Any:
    """`mock.patch.object` replacing `owner.name` by a wrapper timing it as `stage`."""
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with timer.stage(stage):
            return original(*args, **kwargs)

    static = inspect.isclass(owner) and isinstance(
        inspect.getattr_static(owner, name), staticmethod
    )
    return mock.patch.object(owner, name, staticmethod(wrapper) if static else wrapper)


@contextlib.contextmanager
def instrumented(timer: StageTimer) -> Iterator[None]:
    """Every stage of the biLM's forward timed by `timer`, for the duration of the block."""
    input_products = ProjectedLstmStack._input_products
    input_linears = ProjectedLstmStack._input_linears
    gathered = InputBlocks.gathered.__func__  # type: ignore[attr-defined]
    step_products = ProjectedLstmStack._step_products
    clamp = torch.Tensor.clamp

    def timed_input_products(self: Any, x: torch.Tensor, layer: int, route: str) -> Any:
        if route != "bmm":  # its per-direction linears are timed (timed_input_linears)
            return input_products(self, x, layer, route)
        return timer.product(
            "input products",
            lambda: input_products(self, x, layer, route),
            x.shape[-2],
            x.shape[-1],
        )

    def timed_input_linears(self: Any, layer: int, route: str, directions: Any = (0, 1)) -> Any:
        with timer.stage("input products"):  # the weights' preparation (checks: their stage)
            linears = input_linears(self, layer, route, directions)

        def timed(linear: Callable) -> Callable:
            return lambda x: timer.product(
                "input products", lambda: linear(x), x.shape[-2], x.shape[-1]
            )

        return [timed(linear) for linear in linears]

    def timed_gathered(cls: Any, gates: torch.Tensor, index: torch.Tensor, max_rows: int) -> Any:
        blocks = gathered(cls, gates, index, max_rows)
        gather = blocks.gates

        def timed(start: int, end: int) -> torch.Tensor:
            with timer.stage("packing"):  # the first layer's gather by word, a block at a time
                return gather(start, end)

        blocks.gates = timed
        return blocks

    def timed_step_products(
        self: Any, layer: int, route: str, batch_size: int, directions: Any = (0, 1)
    ) -> Any:
        with timer.stage("packed-weight checks"):  # the rest of it is building closures
            steps = step_products(self, layer, route, batch_size, directions)

        def wrapped(gates: Callable, project: Callable) -> Tuple[Callable, Callable]:
            def timed_gates(inputs_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
                name = "step: recurrent products"
                return timer.product(name, lambda: gates(inputs_t, h), h.shape[-2], h.shape[-1])

            def timed_project(m: torch.Tensor) -> torch.Tensor:
                name = "step: projection products"
                return timer.product(name, lambda: project(m), m.shape[-2], m.shape[-1])

            return timed_gates, timed_project

        return [wrapped(gates, project) for gates, project in steps]

    def timed_clamp(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if timer.current != "step loop: rest":  # the cell clip stays in lstm_cell's stage
            return clamp(self, *args, **kwargs)
        with timer.stage("step: projection clip"):
            return clamp(self, *args, **kwargs)

    patches = [
        # the stage timer is one stack: the two directions run one after the other here (the
        # plain pass times them at once, `ProjectedLstmStack._directions_at_once`)
        mock.patch.object(ProjectedLstmStack, "_directions_at_once", lambda *args: False),
        _wrap(timer, CharCnnEncoder, "encode_words", STAGES[0][0]),
        _wrap(timer, CharCnnEncoder, "distinct_words", STAGES[1][0]),
        _wrap(timer, CharCnnEncoder, "tokens", STAGES[1][0]),
        mock.patch.object(ProjectedLstmStack, "_input_products", timed_input_products),
        mock.patch.object(ProjectedLstmStack, "_input_linears", timed_input_linears),
        mock.patch.object(InputBlocks, "gathered", classmethod(timed_gathered)),
        _wrap(timer, derived.DerivedCopies, "get", "packed-weight checks"),
        mock.patch.object(ProjectedLstmStack, "_step_products", timed_step_products),
        _wrap(timer, lstm_module, "lstm_cell", "step: gates + cell clip"),
        mock.patch.object(torch.Tensor, "clamp", timed_clamp),
        _wrap(timer, ProjectedLstmStack, "_recurrence", "step loop: rest"),
        _wrap(timer, ProjectedLstmStack, "_word_streams", "packing"),
        _wrap(timer, _Packing, "__init__", "packing"),
        _wrap(timer, _Packing, "pack", "packing"),
        _wrap(timer, _Packing, "unpack", "output"),
        _wrap(timer, bilm_module, "remove_sentence_boundaries", "output"),
    ]
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield


def run_pass(bilm: BiLm, batches: List[torch.Tensor]) -> float:
    """Seconds of one pass over `batches`, the word cache emptied first."""
    bilm.char_cnn.clear_word_cache()
    start = time.perf_counter()
    with torch.no_grad():
        for batch in batches:
            bilm(batch)
    return time.perf_counter() - start


def profile_pass(bilm: BiLm, batches: List[torch.Tensor]) -> StageTimer:
    """One pass with every stage timed (the word cache emptied first)."""
    timer = StageTimer()
    bilm.char_cnn.clear_word_cache()
    with torch.no_grad(), instrumented(timer):
        for batch in batches:
            with timer.stage("other"):
                bilm(batch)
    return timer


def bmm_flops(bilm: BiLm, batches: List[torch.Tensor]) -> float:
    """The pass's FLOPs as `elmo_benchmarks.bilm_forward` counts them: `FlopCounterMode` on the `bmm`
    path (it does not see oneDNN's packed products; the arithmetic is the same)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, mock.patch.object(onednn, "AVAILABLE", False):
        run_pass(bilm, batches)
    return float(counter.get_total_flops())


def shares(timer: StageTimer) -> Dict[str, float]:
    """Each stage's fraction of the instrumented forward (they sum to 1)."""
    total = sum(timer.seconds.values())
    return {name: timer.seconds.get(name, 0.0) / total for name, _ in STAGES}


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name and its widest vector extensions, from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as handle:
            text = handle.read()
    except OSError:
        return "unknown"
    model = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line),
        "unknown",
    )
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")),
        [],
    )
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"]
    return f"{model} ({', '.join(f for f in wanted if f in flags) or 'no AVX2'})"


def profile(
    bilm: BiLm, batches: List[torch.Tensor], threads: int, flops: Optional[float]
) -> Dict[str, Any]:
    """One thread count's record: warm-up, a plain timed pass, an instrumented pass."""
    from elmo_benchmarks.bilm_forward import matmul_peak

    torch.set_num_threads(threads)
    run_pass(bilm, batches)  # warm-up
    plain = run_pass(bilm, batches)
    timer = profile_pass(bilm, batches)
    instrumented_s = sum(timer.seconds.values())
    peak = matmul_peak(torch.device("cpu"))
    record: Dict[str, Any] = {
        "threads": threads,
        "load_average": load_average(),
        "forward_s": plain,
        "instrumented_forward_s": instrumented_s,
        "shares": shares(timer),
        "stage_gflops_per_s": {
            name: timer.flops[name] / timer.seconds[name] / 1e9
            for name in timer.flops
            if timer.seconds[name] > 0
        },
        "step_products_by_rows": {
            f"{low}-{high}" if high < 1 << 30 else f"{low}+": {
                "calls": int(calls),
                "share": seconds / instrumented_s,
                "gflops_per_s": flops_ / seconds / 1e9 if seconds else 0.0,
            }
            for (low, high), (calls, seconds, flops_) in sorted(timer.by_rows.items())
        },
        "matmul_gflops_per_s": peak / 1e9,
    }
    if flops is not None:
        record["plugin_gflops_per_s"] = flops / plain / 1e9
        record["fraction_of_matmul_peak"] = flops / plain / peak
    return record


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="paper", help="elmo_benchmarks.common's random bilm-tf")
    parser.add_argument("--options-file", help="a bilm-tf options file instead of --config")
    parser.add_argument("--weight-file", help="its weight file")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--precision",
        default="float32",
        choices=PRECISIONS,
        help="set_precision's setting for the passes (the FLOPs are counted in float32 first)",
    )
    parser.add_argument("--no-flops", action="store_true", help="skip the FlopCounterMode pass")
    parser.add_argument("--trace", help="write a torch.profiler Chrome trace of one pass here")
    parser.add_argument("--json", help="write the records here too")
    args = parser.parse_args(argv)
    if bool(args.options_file) != bool(args.weight_file):
        parser.error("--options-file and --weight-file go together")

    start = time.perf_counter()
    if args.options_file:
        files = {"options_file": args.options_file, "weight_file": args.weight_file}
    else:
        from elmo_benchmarks.common import random_bilm_tf

        files = random_bilm_tf(args.config)  # built once and cached: not the user's start-up
    before_load = time.perf_counter()
    bilm = load_bilm(files["options_file"], files["weight_file"]).eval()
    loaded = time.perf_counter()

    from elmo_benchmarks.common import conll_dev_sentences, emit, kernels

    sentences = sorted(conll_dev_sentences(args.sentences), key=len)
    batches = [
        batch_char_ids(sentences[i : i + args.batch_size])
        for i in range(0, len(sentences), args.batch_size)
    ]
    tokens = sum(len(s) for s in sentences)
    with torch.no_grad():
        cold = time.perf_counter()
        bilm(batches[0])
        cold_s = time.perf_counter() - cold
        bilm.char_cnn.clear_word_cache()
        warm = time.perf_counter()
        bilm(batches[0])
        warm_s = time.perf_counter() - warm
    bilm.char_cnn.clear_word_cache()
    flops = None if args.no_flops else bmm_flops(bilm, batches)
    if args.precision != "float32":  # the same FLOPs, in another precision from here on
        set_precision(bilm, args.precision)
        with torch.no_grad():
            bilm(batches[0])  # its weights prepared (quantised or copied) before the passes
    records = [profile(bilm, batches, threads, flops) for threads in args.threads]
    if args.trace:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            profile_pass(bilm, batches)
        prof.export_chrome_trace(args.trace)
    result = {
        "bench": "profile_stages",
        "config": args.options_file or args.config,
        "cpu": cpu_model(),
        "torch": torch.__version__,
        "kernels": kernels(),  # what the kernels could use (the ISA caps, VNNI)
        "sentences": len(sentences),
        "tokens": tokens,
        "batch_size": args.batch_size,
        "precision": args.precision,
        "start_up": {
            "process_start_to_imports_s": _AGE_AT_START + (_IMPORTED - _CLOCK_AT_START),
            "interpreter_s": _AGE_AT_START,
            "imports_s": _IMPORTED - _CLOCK_AT_START,
            "load_weights_s": loaded - before_load,
            "first_batch_cold_s": cold_s,
            "first_batch_warm_s": warm_s,
            "weight_file_build_s": before_load - start,
        },
        "runs": records,
    }
    emit(result)
    print_table(result)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return result


def print_table(result: Dict[str, Any]) -> None:
    """The markdown tables of docs/performance.md's section."""
    runs = result["runs"]
    print(
        f"\n{result['cpu']}, torch {result['torch']}, ATen kernels "
        f"{result['kernels']['cpu_capability']}, "
        f"ONEDNN_MAX_CPU_ISA {result['kernels']['onednn_max_cpu_isa']}, "
        f"{result['tokens']} tokens, precision {result['precision']}"
    )
    head = " | ".join(f"{r['threads']} thread(s)" for r in runs)
    print(f"| stage | what | {head} |")
    print("| --- | --- |" + " ---: |" * len(runs))
    for name, what in STAGES:
        cells = " | ".join(f"{100 * r['shares'][name]:.1f}%" for r in runs)
        print(f"| {name} | {what} | {cells} |")
    rows = [
        ("forward, plain pass (s)", lambda r: f"{r['forward_s']:.2f}"),
        ("forward, instrumented pass (s)", lambda r: f"{r['instrumented_forward_s']:.2f}"),
        ("load average", lambda r: r["load_average"]),
        ("matmul GFLOP/s (2048^2)", lambda r: f"{r['matmul_gflops_per_s']:.1f}"),
        ("biLM GFLOP/s", lambda r: f"{r.get('plugin_gflops_per_s', 0):.1f}"),
        ("fraction of matmul", lambda r: f"{r.get('fraction_of_matmul_peak', 0):.2f}"),
    ]
    for name, cell in rows:
        print(f"| {name} | | {' | '.join(cell(r) for r in runs)} |")
    for name in ("input products", "step: recurrent products", "step: projection products"):
        cells = " | ".join(f"{r['stage_gflops_per_s'].get(name, 0):.1f}" for r in runs)
        print(f"| {name}: GFLOP/s | | {cells} |")
    buckets = list(runs[0]["step_products_by_rows"])
    for bucket in buckets:
        shares_at = []
        for r in runs:
            b = r["step_products_by_rows"].get(bucket)
            shares_at.append(f"{100 * b['share']:.1f}% at {b['gflops_per_s']:.1f}" if b else "-")
        calls = runs[0]["step_products_by_rows"][bucket]["calls"]
        print(
            f"| step products, {bucket} rows ({calls} calls) | share, GFLOP/s | {' | '.join(shares_at)} |"
        )
    s = result["start_up"]
    print(
        f"\nstart-up: interpreter {s['interpreter_s']:.2f} s, imports {s['imports_s']:.2f} s, "
        f"loading the weights {s['load_weights_s']:.2f} s; first batch cold "
        f"{s['first_batch_cold_s']:.2f} s, warm {s['first_batch_warm_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
