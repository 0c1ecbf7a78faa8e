"""Which kernel library runs each of the biLM's large matrix products on this machine, chosen by
timing them here rather than by what was fastest on the developers' CPUs.

A route that is best on one CPU can be a fraction of another's rate (oneDNN against MKL for the
float32 products, fbgemm against oneDNN for int8: oneDNN reaches Intel's AMX, fbgemm does not).
So for each product shape (input and output features), row count (a bucket of them) and
intra-op thread count the first biLM pass meets, every route available is timed on random
operands of that shape, once, and the fastest is kept in the cache
(`$ELMO_BILM_CACHE/routes/`, one JSON file per CPU model and features, torch version and CPU
capability), so later processes on the same machine read it instead of timing again. Products
whose weights are smaller than `MIN_TIMED_BYTES` take each precision's first route untimed: there
the per-call overhead, not the kernel, sets the time, and timing them would cost more than it
saves. docs/performance.md ("Routes chosen per machine") has what was chosen on which CPU.
"""

import functools
import hashlib
import json
import logging
import math
import os
import platform
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, cast

import torch

from elmo_bilm.model import fused_cell, int8
from elmo_bilm.utils.errors import UsageError
from elmo_bilm.utils.files import atomic_output, cache_dir

logger = logging.getLogger(__name__)

# float32 bytes of a product's weights from which its routes are timed (smaller: the first route)
MIN_TIMED_BYTES = 2**20
# rows are timed at these counts; a product of any other count takes the nearest (in log scale)
ROW_BUCKETS = (1, 4, 16, 64, 256)
# each route's timing: at least this long, at least `_MIN_CALLS` calls, after `_WARM_UP` calls
_MIN_SECONDS = 0.02
_MIN_CALLS = 3
_WARM_UP = 2


def available(precision: str) -> Tuple[str, ...]:
    """The routes of `precision`'s products on this machine, the untimed default first; `"cell"`:
    the LSTM cell's pointwise step, in the compiled loop or as eager ops."""
    if precision == "cell":
        return ("fused", "eager") if fused_cell.built() else ("eager",)
    onednn = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    if precision == "float32":
        return ("onednn", "mkl") if onednn else ("mkl",)
    if precision == "int8":
        return ("fbgemm", "onednn") if int8.ONEDNN else ("fbgemm",)
    raise ValueError(f"no routes are timed for precision {precision!r}")


def row_bucket(rows: int) -> int:
    """The timed row count nearest to `rows` in log scale."""
    return min(ROW_BUCKETS, key=lambda bucket: abs(math.log(max(rows, 1) / bucket)))


# one route's product, its weight prepared: x (rows, in) -> x W^T (rows, out)
Prepared = Callable[[torch.Tensor], torch.Tensor]


def prepare(precision: str, route: str, weight: torch.Tensor, rows: int) -> Prepared:
    """`x -> x @ weight.T` on `route` for float32 inputs (`weight` (out, in) float32 on the CPU),
    its weight prepared now: what `time_route` times and the products run."""
    if precision == "float32" and route == "onednn":
        pack = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), rows)
        linear = torch.ops.mkldnn._linear_pointwise
        return lambda x: cast(torch.Tensor, linear(x, pack, None, "none", [], ""))
    if precision == "float32" and route == "mkl":
        transposed = weight.t()  # the (in, out) view: MKL reads it without a copy
        return lambda x: torch.mm(x, transposed)
    if precision == "int8":
        packed = int8.pack(weight, None, route, rows)
        return lambda x: int8.linear(x, packed)
    raise ValueError(f"no route {route!r} for precision {precision!r}")


def _cell(route: str, dim: int, rows: int) -> Callable[[], Any]:
    """One LSTM cell step of `rows` rows and `dim` cells on `route`, on random gates (`"fused"`
    where the loop does not apply here: the eager ops, as `lstm.lstm_cell` falls back)."""
    generator = torch.Generator().manual_seed(0)
    gates = torch.randn(rows, 4 * dim, generator=generator)
    c = torch.randn(rows, dim, generator=generator)
    if route == "fused":
        return lambda: fused_cell.lstm_cell(gates, c, 3.0) or fused_cell.eager_cell(gates, c, 3.0)
    return lambda: fused_cell.eager_cell(gates, c, 3.0)


def time_route(precision: str, route: str, in_features: int, out_features: int, rows: int) -> float:
    """Seconds per product of `rows` rows on `route`, on random operands of the shape: the
    fastest of repeated calls after a warm-up (`"cell"`: a step of `in_features` cells)."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        x = torch.randn(rows, in_features, generator=generator)
        if precision == "cell":  # its own gates and cells: `x` unused
            step = _cell(route, in_features, rows)
            product = lambda _: step()  # noqa: E731
        else:
            weight = torch.randn(out_features, in_features, generator=generator)
            product = prepare(precision, route, weight / in_features**0.5, rows)
        for _ in range(_WARM_UP):
            product(x)
        best, calls, start = float("inf"), 0, time.perf_counter()
        while calls < _MIN_CALLS or time.perf_counter() - start < _MIN_SECONDS:
            began = time.perf_counter()
            product(x)
            best = min(best, time.perf_counter() - began)
            calls += 1
    return best


def machine() -> Dict[str, str]:
    """What a choice holds for: the CPU's model and the features the kernels dispatch on, torch's
    version and CPU capability (which `ATEN_CPU_CAPABILITY` lowers); read once a process."""
    return dict(_machine())


@functools.cache
def _machine() -> Tuple[Tuple[str, str], ...]:
    model, flags = platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == platform.machine():
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    wanted = (
                        "avx2",
                        "avx512f",
                        "avx512_vnni",
                        "avx512_bf16",
                        "amx_bf16",
                        "amx_int8",
                    )
                    flags = " ".join(flag for flag in value.split() if flag in wanted)
    except OSError:
        pass
    return (
        ("cpu", model),
        ("features", flags),
        ("torch", torch.__version__),
        ("capability", torch.backends.cpu.get_cpu_capability()),
    )


# what a choice is kept under: (precision, in, out, row bucket, intra-op threads)
Key = Tuple[str, int, int, int, int]


class RouteTable:
    """The routes chosen on this machine, timed on first need and kept in `path` (None: in memory
    only). Thread-safe: the two direction threads of a first pass time each shape once.

    # Parameters

    path : `Path`, optional
        The JSON file of this machine's choices (`default_table` names it in the cache).
    timer : `Callable`, optional (default = `time_route`)
        `(precision, route, in, out, rows) -> seconds`; the tests inject theirs.
    """

    def __init__(
        self,
        path: Optional[Path] = None,
        timer: Callable[[str, str, int, int, int], float] = time_route,
    ) -> None:
        self.path, self.timer = path, timer
        self.choices: Dict[Key, str] = {}
        self._lock = threading.Lock()
        self._read = False
        self._announced = False

    def route(self, precision: str, in_features: int, out_features: int, rows: int) -> str:
        """The route of a `precision` product `(rows, in) x (in, out)` under the calling thread's
        intra-op threads: timed the first time its shape, row bucket and threads are met."""
        routes = available(precision)
        if len(routes) == 1 or 4 * in_features * out_features < MIN_TIMED_BYTES:
            return routes[0]
        key = (precision, in_features, out_features, row_bucket(rows), torch.get_num_threads())
        with self._lock:
            if not self._read:
                self._load()
            chosen = self.choices.get(key)
            if chosen not in routes:
                chosen = self._choose(key, routes)
        return chosen

    def _choose(self, key: Key, routes: Tuple[str, ...]) -> str:
        precision, in_features, out_features, rows, threads = key
        started = time.perf_counter()
        seconds = {
            route: self.timer(precision, route, in_features, out_features, rows) for route in routes
        }
        chosen = min(routes, key=lambda route: seconds[route])
        self.choices[key] = chosen
        if not self._announced:  # one line a process; each shape's figures at debug level
            self._announced = True
            logger.info(
                "elmo_bilm: timing the biLM's kernels on this CPU, once per product shape%s",
                f" (kept in {self.path})" if self.path is not None else "",
            )
        logger.debug(
            "elmo_bilm: %s products %dx%d at %d rows, %d thread(s): %s (%s; %.2f s)",
            precision,
            in_features,
            out_features,
            rows,
            threads,
            chosen,
            ", ".join(f"{route} {1e3 * s:.2f} ms" for route, s in seconds.items()),
            time.perf_counter() - started,
        )
        self._save()
        return chosen

    def _load(self) -> None:
        """Read the kept choices (a missing, unreadable, malformed or foreign file is timed
        again)."""
        self._read = True
        if self.path is not None:
            self.choices.update(_stored(self.path))

    def _save(self) -> None:
        """Keep the choices for later processes, merged under the file's lock with those another
        process kept meanwhile; a cache that cannot be written costs a timing per process, not
        the run, and a save that meets another process's is left to the next timing."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(self.path, overwrite=True) as partial:
                choices = {**_stored(self.path), **self.choices}
                record: Dict[str, Any] = {
                    "machine": machine(),
                    "choices": [
                        {"key": list(key), "route": route} for key, route in sorted(choices.items())
                    ],
                }
                with open(partial, "w") as handle:
                    json.dump(record, handle, indent=1)
        except FileExistsError as error:  # another process is saving: it keeps its choices
            logger.debug("elmo_bilm: the chosen routes were not kept this time (%s)", error)
        except OSError as error:
            logger.info("elmo_bilm: the chosen routes were not kept (%s)", error)
            self.path = None


def _stored(path: Path) -> Dict[Key, str]:
    """The well-formed choices of this machine kept in `path` (none from a missing, unreadable
    or malformed file, or another machine's)."""
    try:
        with open(path) as handle:
            stored = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(stored, dict) or stored.get("machine") != machine():
        return {}
    entries = stored.get("choices")
    choices: Dict[Key, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        key = entry.get("key") if isinstance(entry, dict) else None
        route = entry.get("route") if isinstance(entry, dict) else None
        if (
            isinstance(key, list)
            and len(key) == 5
            and isinstance(key[0], str)
            and all(type(part) is int for part in key[1:])
            and isinstance(route, str)
        ):
            choices[(key[0], key[1], key[2], key[3], key[4])] = route
    return choices


_tables: Dict[Optional[Path], RouteTable] = {}
_tables_lock = threading.Lock()


def _forget() -> None:
    """In a forked child: new tables and locks (a lock another thread held at the fork stays
    held in the child)."""
    global _tables_lock
    _tables.clear()
    _tables_lock = threading.Lock()


def default_table() -> RouteTable:
    """This process's table, kept in the cache under the machine's identity."""
    identity = hashlib.sha256(json.dumps(machine(), sort_keys=True).encode()).hexdigest()[:16]
    path: Optional[Path]
    try:
        path = cache_dir() / "routes" / f"{identity}.json"
    except UsageError as error:  # the cache named is not a folder: time in this process only
        logger.info("elmo_bilm: the chosen routes are not kept (%s)", error)
        path = None
    with _tables_lock:
        if path not in _tables:
            _tables[path] = RouteTable(path)
        return _tables[path]


def route(precision: str, in_features: int, out_features: int, rows: int) -> str:
    """`RouteTable.route` on this process's table (`default_table`); for the LSTM cell
    (`"cell"`) `in_features` is its cells and `out_features` its gates (4 x cells)."""
    if 4 * in_features * out_features < MIN_TIMED_BYTES or len(available(precision)) == 1:
        return available(precision)[0]
    return default_table().route(precision, in_features, out_features, rows)


os.register_at_fork(after_in_child=_forget)
