"""The LSTM step's pointwise work (`elmo_bilm.model.lstm.lstm_cell`) as one compiled loop on the CPU.

Eager PyTorch spends a dozen element-wise ops on a step's gates (three sigmoids, two tanh, the
cell update and clip), each a pass over memory with a tensor of its own; `fused_cell.c` does them
in one vectorised pass. It is compiled when the package is built (`make install`, the wheel:
packaging/elmo-bilm/setup.py), once per instruction set in `VARIANTS`, into the package's own
folder; at run time the variant for the instruction set PyTorch runs at
(`torch.backends.cpu.get_cpu_capability()`, so that `ATEN_CPU_CAPABILITY=avx2` caps it too) is
found by the import system beside this module and loaded. Nothing is compiled, cached or written
while a user runs. Where the package was built without it (no compiler, no glibc vector maths,
another architecture) or PyTorch runs at another instruction set, `lstm_cell` returns None and the
caller keeps the eager ops: the same arithmetic, rounded within a few float32 ulps of it. The
measurements behind its use are in docs/performance.md ("The fused LSTM cell").
"""

import ctypes
import importlib.util
import logging
import threading
from typing import Dict, Optional, Tuple

import torch

logger = logging.getLogger(__name__)

# the library built per PyTorch CPU capability (packaging/elmo-bilm/setup.py); other capabilities
# keep the eager ops
VARIANTS: Dict[str, str] = {
    "AVX2": "elmo_bilm.model._fused_cell_avx2",
    "AVX512": "elmo_bilm.model._fused_cell_avx512",
}
# a direction's intra-op threads up to which the one-thread loop beats the eager ops' threads
MAX_THREADS = 2

_lock = threading.Lock()
_loaded: Dict[str, Optional[ctypes.CDLL]] = {}


def _load(capability: str) -> Optional[ctypes.CDLL]:
    """The library built for `capability` with the package, found where its modules are; None
    (the reason logged) when the package was built without it or it does not load here."""
    spec = importlib.util.find_spec(VARIANTS[capability])
    if spec is None or spec.origin is None:
        logger.info(
            "the fused LSTM cell was not built with the package for %s (no C compiler at "
            "install time?): the LSTM cell runs as eager ops",
            capability,
        )
        return None
    try:
        library = ctypes.CDLL(spec.origin)
        for kernel in ("lstm_cell_float32", "lstm_cell_bfloat16", "row_hashes"):
            getattr(library, kernel)  # another build's library (or none): AttributeError
        return library
    except (OSError, AttributeError) as error:
        logger.info("the fused LSTM cell was not loaded (%s): eager ops instead", error)
        return None


def _library() -> Optional[ctypes.CDLL]:
    """The kernel library for PyTorch's CPU capability now, loaded once per process and
    capability; None where there is none."""
    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in VARIANTS:
        return None
    with _lock:
        if capability not in _loaded:
            _loaded[capability] = _load(capability)
        return _loaded[capability]


def eager_cell(
    gates: torch.Tensor, c: torch.Tensor, cell_clip: Optional[float]
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The same step as eager ops (any device, dtype and gradient): what the loop replaces."""
    i, j, f, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
    if cell_clip is not None:
        c = c.clamp(-cell_clip, cell_clip)
    return c, torch.sigmoid(o) * torch.tanh(c)


def built() -> bool:
    """Whether the compiled loop loads for PyTorch's CPU capability here."""
    return _library() is not None


def lstm_cell(
    gates: torch.Tensor, c: torch.Tensor, cell_clip: Optional[float]
) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
    """`lstm.lstm_cell`'s `(c', m)` from the compiled loop, float32, for one direction's gates
    (n, 4 d) (float32 or bfloat16) and cell (n, d) (float32), both contiguous on the CPU and
    needing no gradient; None where it does not apply or was not built (the caller runs the
    eager ops). The loop runs on the calling thread alone, so only up to `MAX_THREADS` intra-op
    threads."""
    if (
        gates.device.type != "cpu"
        or gates.dtype not in (torch.float32, torch.bfloat16)
        or c.dtype != torch.float32
        or gates.dim() != 2
        or c.shape != (gates.shape[0], gates.shape[1] // 4)
        or gates.shape[1] != 4 * c.shape[1]
        or not (gates.is_contiguous() and c.is_contiguous())
        or (torch.is_grad_enabled() and (gates.requires_grad or c.requires_grad))
        or torch.get_num_threads() > MAX_THREADS
    ):
        return None
    library = _library()
    if library is None:
        return None
    c_out, m = torch.empty_like(c), torch.empty_like(c)
    kernel = (
        library.lstm_cell_float32 if gates.dtype == torch.float32 else library.lstm_cell_bfloat16
    )
    clip = float("inf") if cell_clip is None else float(cell_clip)
    kernel(
        ctypes.c_void_p(gates.data_ptr()),
        ctypes.c_void_p(c.data_ptr()),
        ctypes.c_void_p(c_out.data_ptr()),
        ctypes.c_void_p(m.data_ptr()),
        ctypes.c_long(c.shape[0]),
        ctypes.c_long(c.shape[1]),
        ctypes.c_float(clip),
    )
    return c_out, m


def row_hashes(words: torch.Tensor, multipliers: torch.Tensor) -> Optional[torch.Tensor]:
    """`elmo_bilm.model.derived`'s row hashes of `words` (rows, width) int32, contiguous on the
    CPU, with `multipliers` (width,) int64: `sum_j words[r, j] * multipliers[j]` modulo 2^64
    (int64, the same integers as `torch.mv` of the words widened) in the compiled loop; None
    where it was not built (the caller computes them with torch)."""
    if (
        words.device.type != "cpu"
        or words.dtype != torch.int32
        or words.dim() != 2
        or not words.is_contiguous()
        or multipliers.dtype != torch.int64
        or not multipliers.is_contiguous()
        or multipliers.shape != (words.shape[1],)
    ):
        return None
    library = _library()
    if library is None:
        return None
    hashes = torch.empty(words.shape[0], dtype=torch.int64)
    library.row_hashes(
        ctypes.c_void_p(words.data_ptr()),
        ctypes.c_long(words.shape[0]),
        ctypes.c_long(words.shape[1]),
        ctypes.c_void_p(multipliers.data_ptr()),
        ctypes.c_void_p(hashes.data_ptr()),
    )
    return hashes
