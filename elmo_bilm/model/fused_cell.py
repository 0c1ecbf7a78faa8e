"""The LSTM step's pointwise work (`elmo_bilm.model.lstm.lstm_cell`) as one compiled loop on the CPU.

Eager PyTorch spends a dozen element-wise ops on a step's gates (three sigmoids, two tanh, the
cell update and clip), each a pass over memory with a tensor of its own; `fused_cell.c` does them
in one vectorised pass. It is compiled on first use with the machine's C compiler (`$CC`, else
`cc`) for the instruction set PyTorch runs at (`torch.backends.cpu.get_cpu_capability()`: AVX2
or AVX-512, so that `ATEN_CPU_CAPABILITY=avx2` caps it too) and kept in the biLM cache
(`elmo_bilm.utils.files.cache_dir()`, `kernels/`). Where there is no compiler, no glibc
vector maths or another instruction set, `lstm_cell` returns None and the caller keeps the eager
ops: the same arithmetic, rounded within a few float32 ulps of it. A compiler's refusal is kept
beside the library (`.so.failed`), so that it is asked once, not in every process, and so is a
compiler that does not finish within `COMPILE_TIMEOUT` (killed with the processes it started).
The cache may be a folder others share: the folder and the library are opened once, without
following links, checked on their descriptors (this user's, no one else may write them) and the
checked descriptor is what is loaded (`/proc/self/fd/N`), never the path again (project issue
79). The measurements behind its use are in docs/performance.md ("The fused LSTM cell").
"""

import contextlib
import ctypes
import hashlib
import logging
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from elmo_bilm.utils.files import _alive, cache_dir

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("fused_cell.c")
# the compiler's flags per PyTorch CPU capability; other capabilities keep the eager ops
_ARCH_FLAGS: Dict[str, List[str]] = {
    "AVX2": ["-mavx2", "-mfma"],
    "AVX512": [
        "-mavx2",
        "-mfma",
        "-mavx512f",
        "-mavx512dq",
        "-mavx512bw",
        "-mavx512vl",
        "-mprefer-vector-width=512",
    ],
}
_FLAGS = ["-O3", "-fno-math-errno", "-fopenmp-simd", "-shared", "-fPIC"]
_LIBRARIES = ["-lmvec", "-lm"]
# a direction's intra-op threads up to which the one-thread loop beats the eager ops' threads
MAX_THREADS = 2

# seconds a compile may take (a few on an idle machine); past them the compiler is killed
COMPILE_TIMEOUT = 300.0

_lock = threading.Lock()
_loaded: Dict[str, Optional[ctypes.CDLL]] = {}
# descriptors of the loaded libraries (`_load`), open for as long as the process runs
_descriptors: List[int] = []
# a compile's partial output: `LIBRARY.PID.RANDOM.partial` (PID: the compiling process)
_PARTIAL = re.compile(r"^fused_cell-.+\.so\.([0-9]+)\.[^.]+\.partial$")


def _compiler() -> Optional[List[str]]:
    """The C compiler's command (`$CC`, else `cc`), or None when it is not installed."""
    command = shlex.split(os.environ.get("CC", "cc"))
    if not command or shutil.which(command[0]) is None:
        return None
    return command


def _private(status: os.stat_result) -> bool:
    """Whether a file or folder (its `os.fstat`) belongs to this user and no one else may write
    it: a library in the cache runs as this user once loaded, and the cache may be a folder
    others share."""
    owner = getattr(os, "getuid", lambda: status.st_uid)()
    return status.st_uid == owner and not status.st_mode & 0o022


def _open_verified(folder: Path, library: Path) -> Optional[int]:
    """A descriptor of `library`, opened once (no symbolic link followed, the folder and the
    file each opened and checked by descriptor: a directory and a regular file this user owns
    and no one else may write), or None (the reason logged). What is loaded is then what was
    checked: `_load` opens the descriptor, not the path, so a file swapped in after the check
    is never loaded."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        folder_fd = os.open(folder, flags | getattr(os, "O_DIRECTORY", 0))
    except OSError as error:
        logger.info("%s: not opened (%s): eager ops instead", folder, error.strerror or error)
        return None
    try:
        fd = os.open(library.name, flags, dir_fd=folder_fd)
    except OSError as error:
        os.close(folder_fd)
        logger.info("%s: not opened (%s): eager ops instead", library, error.strerror or error)
        return None
    try:
        folder_status, status = os.fstat(folder_fd), os.fstat(fd)
    finally:
        os.close(folder_fd)
    if not (
        stat.S_ISDIR(folder_status.st_mode)
        and stat.S_ISREG(status.st_mode)
        and _private(folder_status)
        and _private(status)
    ):
        os.close(fd)
        logger.info(
            "%s: not loaded, since another user owns or may write it or its folder, or it is "
            "not a regular file: eager ops instead",
            library,
        )
        return None
    return fd


def _load(fd: int, library: Path) -> Optional[ctypes.CDLL]:
    """The library open at descriptor `fd` (checked by `_open_verified`), loaded through
    `/proc/self/fd/FD`: the open file itself, whatever the path names by now. The descriptor
    stays open while the library is loaded, so no other file is ever loaded under that name."""
    proc = f"/proc/self/fd/{fd}"
    if not os.path.exists(proc):
        os.close(fd)
        logger.info("%s: no /proc/self/fd to load it from: eager ops instead", library)
        return None
    try:
        loaded = ctypes.CDLL(proc)
    except OSError:
        os.close(fd)
        raise
    _descriptors.append(fd)  # the loaded library's name: kept open for the process's life
    return loaded


def _sweep_partials(folder: Path) -> None:
    """Remove the `.partial` files of compilers whose process died (`NAME.PID.RANDOM.partial`;
    killed, or timed out and then killed); those of live processes are theirs to finish."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = _PARTIAL.match(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _alive(pid):
            with contextlib.suppress(OSError):
                os.remove(folder / name)


def _compile(arguments: List[str], timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run the compiler `arguments` in a process group of its own; past `timeout` seconds the
    whole group (the driver and the compiler, assembler and linker it started) is killed and
    `subprocess.TimeoutExpired` raised."""
    with subprocess.Popen(
        arguments,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(arguments, process.returncode, stdout, stderr)


def _build(capability: str) -> Optional[ctypes.CDLL]:
    """The kernel library for `capability`, compiled into the cache unless it is there already;
    None (and the reason logged) when it cannot be built or loaded here."""
    compiler = _compiler()
    if compiler is None:
        logger.info(
            "no C compiler (%s): the LSTM cell runs as eager ops", os.environ.get("CC", "cc")
        )
        return None
    command = compiler + _FLAGS + _ARCH_FLAGS[capability]
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + " ".join(command + _LIBRARIES).encode()).hexdigest()[:16]
    folder = cache_dir() / "kernels"
    library = folder / f"fused_cell-{capability.lower()}-{key}.so"
    # a compiler that refused this source once refuses it again: later processes skip the try
    failed = library.with_name(library.name + ".failed")
    if failed.exists():
        logger.info(
            "the fused LSTM cell could not be built here (%s): eager ops instead; delete the file "
            "to try again",
            failed,
        )
        return None
    try:
        _sweep_partials(folder)
        if not library.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, partial = tempfile.mkstemp(
                dir=folder, prefix=f"{library.name}.{os.getpid()}.", suffix=".partial"
            )
            os.close(handle)
            try:
                try:
                    compiled = _compile(
                        command + [str(SOURCE), "-o", partial] + _LIBRARIES, COMPILE_TIMEOUT
                    )
                except subprocess.TimeoutExpired:
                    failed.write_text(
                        f"{' '.join(command)}\ntimed out after {COMPILE_TIMEOUT:g} s (killed)\n"
                    )
                    logger.info(
                        "the C compiler did not finish in %g s (killed; noted in %s): eager "
                        "ops instead",
                        COMPILE_TIMEOUT,
                        failed,
                    )
                    return None
                if compiled.returncode != 0:
                    failed.write_text(f"{' '.join(compiled.args)}\n{compiled.stderr}")
                    compiled.check_returncode()
                os.chmod(partial, 0o700)
                os.replace(partial, library)  # complete or absent, whoever compiles at once
            finally:
                if os.path.exists(partial):
                    os.remove(partial)
        fd = _open_verified(folder, library)
        return None if fd is None else _load(fd, library)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", None) or str(error)
        logger.info("the fused LSTM cell was not built (%s): eager ops instead", detail.strip())
        return None


def _library() -> Optional[ctypes.CDLL]:
    """The kernel library for PyTorch's CPU capability now, built once per process and
    capability; None where it cannot be."""
    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in _ARCH_FLAGS:
        return None
    with _lock:
        if capability not in _loaded:
            _loaded[capability] = _build(capability)
        return _loaded[capability]


def lstm_cell(
    gates: torch.Tensor, c: torch.Tensor, cell_clip: Optional[float]
) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
    """`lstm.lstm_cell`'s `(c', m)` from the compiled loop, float32, for one direction's gates
    (n, 4 d) (float32 or bfloat16) and cell (n, d) (float32), both contiguous on the CPU and
    needing no gradient; None where it does not apply or cannot be built (the caller runs the
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
