"""File helpers shared by the plugin: format errors, atomic outputs, path lists, text opening."""

import codecs
import contextlib
import errno
import functools
import glob
import gzip
import hashlib
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import threading
import warnings
from pathlib import Path
from typing import (
    Any,
    BinaryIO,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from elmo_bilm.utils.errors import FormatError, UsageError
from elmo_bilm.utils.names import user_path

try:
    import fcntl
except ImportError:  # Windows: no locks between writers there
    fcntl = None  # type: ignore[assignment]

PathLike = Union[str, "os.PathLike[str]"]


# What a command reports as one line `NAME: error: ...` (exit status 1) instead of a traceback:
# bad input and options, existing or missing files, unwritable folders. Any other exception (a
# bug) keeps its traceback.
USER_ERRORS = (UsageError, OSError)

F = TypeVar("F", bound=Callable[..., Any])

# the exit status of a command ended by Ctrl-C: 128 + SIGINT, what a shell reports
INTERRUPTED = 128 + signal.SIGINT


def sha256_files(
    paths: Iterable[PathLike], open_binary: Optional[Callable[[str], Any]] = None
) -> str:
    """The SHA-256 of the files' contents one after another, read in 1 MiB blocks
    (`open_binary` opens a path for reading bytes on another file system; default: local)."""
    digest = hashlib.sha256()
    for path in paths:
        path = os.fspath(path)
        with open_binary(path) if open_binary is not None else open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def reports_errors(
    name: str, also: Tuple[Type[BaseException], ...] = (), returns: bool = False
) -> Callable[[F], F]:
    """Decorate a command's entry function, the one way every command reports a user's error
    (`USER_ERRORS`, and `also`: a missing extra's ImportError, say): one line `NAME: error: ...`
    on stderr and exit status 1, not a traceback; a warning is one line `NAME: warning: ...`;
    Ctrl-C is one line `NAME: interrupted (Ctrl-C)` and exit status 130, as a shell gives (the
    partial output is removed by `atomic_output` on the way out, before the line).
    `returns`: the function (a console script's `main`) returns the status instead of exiting."""

    caught: Tuple[Type[BaseException], ...] = (*USER_ERRORS, Warning, *also)

    def one_line(message: Any, category: Any, *_: Any, **__: Any) -> None:
        print(f"{name}: warning: {message}", file=sys.stderr)

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            # a warning is one line too (not Python's two, with a source line), and one that
            # PYTHONWARNINGS=error turns into an exception ends the command as an error does
            with warnings.catch_warnings():
                warnings.showwarning = one_line
                try:
                    return function(*args, **kwargs)
                except caught as error:
                    return _report(name, error, returns)
                except KeyboardInterrupt:
                    print(f"{name}: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
                    if not returns:
                        sys.exit(INTERRUPTED)
                    return INTERRUPTED

        return run  # type: ignore[return-value]

    return decorate


def _report(name: str, error: BaseException, returns: bool) -> int:
    """Print `NAME: error: ...` and return 1, or exit with it."""
    if not returns:
        sys.exit(f"{name}: error: {error}")
    print(f"{name}: error: {error}", file=sys.stderr)
    return 1


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """Within the block, SIGTERM (what `kill`, `timeout` and job schedulers send) raises
    `SystemExit(143)` in the main thread, as Ctrl-C raises `KeyboardInterrupt`, so that `finally`
    blocks (removing a half-written file) run before the process ends with the status a SIGTERM
    gives. Does nothing outside the main thread or when a SIGTERM handler is already installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# what a writer holds while it writes (see `writer_lock`), and the hidden partial file of a
# single-file output: named after a digest of the output's name, so that both stay short whatever
# the output's name (a 250-byte name has no room for a suffix) and whoever next holds the output's
# lock finds the partial files of writers that died
_LOCK_SUFFIX = ".lock"


def _hidden_name(path: str, suffix: str) -> str:
    """`FOLDER/.elmo-DIGEST` + `suffix`, DIGEST from the output's name."""
    folder, name = os.path.split(path)
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    return os.path.join(folder, f".elmo-{digest}{suffix}")


def _take(lock: str) -> Optional[int]:
    """The descriptor of `lock` (created if missing) with an exclusive `flock` on it, or None
    where another writer holds it. The file is checked to be the one still at `lock`: its last
    holder removes it before it lets go, so a descriptor of a removed file is tried again."""
    flags = os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    while True:
        try:
            try:
                handle = os.open(lock, os.O_RDWR | os.O_CREAT | flags, 0o644)
            except PermissionError:  # another user's lock file (root's leftover): a lock still
                handle = os.open(lock, os.O_RDONLY | flags)
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            raise UsageError(f"{lock}: a link, not a writer's lock file; remove it") from None
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                raise UsageError(f"{lock}: not a regular file; remove it (a writer's lock file)")
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            return None
        except BaseException:
            os.close(handle)
            raise
        held = os.fstat(handle)
        try:
            there = os.lstat(lock)
        except FileNotFoundError:
            there = None
        if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
            with contextlib.suppress(OSError):  # who holds it, for the message of the next
                os.ftruncate(handle, 0)
                os.write(handle, f"{os.getpid()}\n".encode())
            return handle
        os.close(handle)


def _holder(lock: str) -> str:
    """`process N` from the lock file `lock`, for a message (`another process` if unreadable)."""
    try:
        with open(lock, "rb") as handle:
            text = handle.read(32).strip()
    except OSError:
        text = b""
    if not text.isdigit():
        return "another process"
    if int(text) == os.getpid():
        return f"another thread of this process ({int(text)})"
    return f"process {int(text)}"


@contextlib.contextmanager
def writer_lock(lock: str, what: str) -> Iterator[None]:
    """Hold the exclusive `flock` of the file `lock` for the block; one another writer holds (a
    live process, or another thread of this one) is a `FileExistsError` naming `what`. A lock
    dies with its process, so nothing waits on a writer that is not writing: no process ids, no
    timeouts. The lock file is removed when released (by its holder, so a waiter checks it still
    holds the file at `lock`). Without `fcntl` (Windows) the block runs unlocked."""
    if fcntl is None:
        yield
        return
    handle = _take(lock)
    if handle is None:
        raise FileExistsError(
            f"{what} is being written by {_holder(lock)} (it holds {lock}); wait for it or "
            "write elsewhere"
        )
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # another user's file in a sticky folder: left
            os.remove(lock)
        os.close(handle)


def output_lock(path: str) -> "contextlib.AbstractContextManager[None]":
    """`writer_lock` of the output `path` (an absolute path whose folder is real)."""
    return writer_lock(_hidden_name(path, _LOCK_SUFFIX), path)


def _clear_partials(path: str) -> None:
    """Remove the partial files of `path`'s writers that died (the caller holds its lock):
    `.elmo-DIGEST.*.partial`, and `NAME.PID.partial` of earlier versions."""
    folder, name = os.path.split(path)
    ours = glob.glob(glob.escape(_hidden_name(path, ".")) + "*.partial")
    earlier = glob.glob(os.path.join(glob.escape(folder), f"{glob.escape(name)}.*.partial"))
    for partial in ours + [p for p in earlier if p[len(path) + 1 : -len(".partial")].isdigit()]:
        if os.path.isdir(partial) and not os.path.islink(partial):  # a new folder's staging
            shutil.rmtree(partial, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.remove(partial)


def check_name_length(path: str) -> None:
    """Refuse up front an output whose name its folder's file system cannot hold (255 bytes on
    ext4), before any work (it failed once the work was done)."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return
    if len(os.fsencode(name)) > limit:
        raise UsageError(
            f"{path}: the name is {len(os.fsencode(name))} bytes, the file system of {folder} "
            f"allows at most {limit}; name a shorter file"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _publish(partial: str, path: str, overwrite: bool) -> None:
    """Move the finished `partial` to `path`; without `overwrite`, an output that appeared in
    the meantime is kept (a hard link fails where `path` exists; rename where links are not
    supported)."""
    if overwrite:
        os.replace(partial, path)
        return
    appeared = f"{path} appeared while this process wrote it; not overwriting it"
    try:
        os.link(partial, path)
    except FileExistsError:
        raise FileExistsError(appeared) from None
    except OSError:  # no hard links on this file system
        if os.path.exists(path):
            raise FileExistsError(appeared) from None
        os.replace(partial, path)
    else:
        os.remove(partial)


@contextlib.contextmanager
def atomic_output(path: PathLike, overwrite: bool = False) -> Iterator[str]:
    """Yield a temporary hidden `.elmo-DIGEST.RANDOM.partial` beside `path` to write (a name
    unique to this writer, short whatever `path`'s); on success it becomes `path`, on failure,
    Ctrl-C or SIGTERM it is removed, so `path` only ever holds a complete file. An existing
    `path` (a dangling link too) is an error unless `overwrite`, a folder always; so is a `path`
    another writer holds the lock of (`output_lock`: a live process, or another thread); the
    holder of the lock removes the partial files of writers that died."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: a folder; name the file to write")
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; not overwriting it")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder}: no such folder for {os.path.basename(path)}")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"{folder}: not writable, cannot write {os.path.basename(path)}")
    check_name_length(path)
    real = os.path.join(os.path.realpath(folder), os.path.basename(path))
    with output_lock(real):
        _clear_partials(real)
        # not created here: the writer creates it, with the mode its umask gives
        partial = _hidden_name(real, f".{secrets.token_hex(6)}.partial")
        # the folder held open: a partial is removed where it is even if the folder was moved
        held = None
        if os.unlink in os.supports_dir_fd:  # O_PATH: a write-only folder opens too
            flags = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
            with contextlib.suppress(OSError):
                held = os.open(os.path.dirname(real), flags | os.O_CLOEXEC)
        try:
            with terminate_raises():
                yield partial
                _publish(partial, path, overwrite)
        except OSError as error:
            if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise OSError(
                    error.errno,
                    f"{path}: {error.strerror}; nothing was written ({partial} removed)",
                ) from error
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                if held is None:
                    os.unlink(partial)
                else:
                    os.unlink(os.path.basename(partial), dir_fd=held)
            if held is not None:
                os.close(held)


CACHE_ENV = "ELMO_BILM_CACHE"


def cache_dir() -> Path:
    """The biLM cache: downloads, unpacked archives, converted formats;
    `$ELMO_BILM_CACHE` (read as every user path is, `elmo_bilm.utils.names`: empty means
    unset, `~` expanded, made absolute so that a later `chdir` does not move it), else
    `~/.cache/elmo_bilm`."""
    named = user_path(os.environ.get(CACHE_ENV), CACHE_ENV)
    if named is None:
        return Path.home() / ".cache" / "elmo_bilm"
    if os.path.isabs(named):
        folder = Path(os.path.normpath(named))
    else:
        # a relative value is made absolute where it is first read, once: every later call
        # (after a chdir, a notebook's %cd, a Ray worker's) finds the same cache (it was made
        # absolute at each call, so a chdir moved the cache)
        folder = _RELATIVE_CACHES.setdefault(named, Path(os.path.abspath(named)))
    if os.path.lexists(folder) and not os.path.isdir(folder):  # was ENOTDIR on cache/unpacked
        raise UsageError(
            f"{CACHE_ENV}={named}: {folder} is a file (or a dangling link), not a folder; "
            f"point {CACHE_ENV} at a folder"
        )
    return folder


# $ELMO_BILM_CACHE's relative values, each made absolute where it was first read
_RELATIVE_CACHES: Dict[str, Path] = {}


# errno values that say the cache folder, not the input, is at fault
_CACHE_FAULTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file is too large for the disk",
    errno.EROFS: "it is on a read-only file system",
    errno.EACCES: "it is not writable by this user (another user's cache?)",
    errno.EPERM: "it is not writable by this user (another user's cache?)",
}


@contextlib.contextmanager
def cache_writes(what: str) -> Iterator[None]:
    """Within the block, an OSError that is the cache's fault (full, read-only, another
    user's: `_CACHE_FAULTS`) becomes one line naming `what`, the cache folder and
    `$ELMO_BILM_CACHE`, instead of raw errno text or a blame on the intact input."""
    try:
        yield
    except OSError as error:
        fault = _CACHE_FAULTS.get(error.errno or 0)
        if fault is None or CACHE_ENV in str(error):
            raise
        folder = cache_dir()
        free = ""
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            with contextlib.suppress(OSError):
                free = f", {shutil.disk_usage(_existing(folder)).free / 1e6:.1f} MB free"
        raise OSError(
            error.errno,
            f"{what}: cannot write the cache {folder}: {fault}{free} (set {CACHE_ENV} to a "
            "writable folder with room)",
        ) from None


def _existing(path: Path) -> Path:
    """`path` or its nearest existing parent."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def expand_paths(spec: PathLike) -> List[str]:
    """A directory (its visible files, sorted), a glob (its matches, sorted; none is an error
    naming `spec`) or a file (returned as it is: opening it reports a missing one)."""
    spec = os.fspath(spec)
    if os.path.isdir(spec):
        files = sorted(
            os.path.join(spec, name)
            for name in os.listdir(spec)
            if os.path.isfile(os.path.join(spec, name)) and not name.startswith(".")
        )
    elif any(char in spec for char in "*?["):
        files = sorted(glob.glob(spec))
    else:
        files = [spec]
    if not files:
        raise FileNotFoundError(f"{spec}: no files in that directory or glob")
    return files


def open_bytes(path: PathLike) -> BinaryIO:
    """Open a file for reading bytes, gunzipping it when it starts with the gzip magic bytes;
    a file that is not text (NUL bytes in its first 8 KiB) is a `FormatError` up front. Opened
    once and looked at without seeking, so that a pipe or `/dev/stdin` is read as a stream."""
    try:
        handle: Any = open(path, "rb")
        if handle.peek(2)[:2] == b"\x1f\x8b":
            raw = handle
            handle = gzip.GzipFile(fileobj=raw, mode="rb")
            handle.myfileobj = raw  # closed with it, as when `gzip.open` opens a path
        sample = handle.peek(8192)[:8192]
    except (OSError, EOFError) as error:
        raise FormatError(f"{path}: cannot read ({error})") from error
    if b"\x00" in sample:
        handle.close()
        raise FormatError(f"{path}: looks like a binary file (NUL bytes), not text")
    return handle  # type: ignore[return-value]


_LINE_END = re.compile(rb"\r\n|\r|\n")


def raw_lines(handle: BinaryIO, chunk_size: int = 1 << 20) -> Iterator[Tuple[int, bytes]]:
    """`(byte offset, line)` of a binary stream's lines, split as Python's text mode splits them
    (universal newlines: LF, CRLF and CR-only, as old Mac files and some exports have), line ends
    removed; read in chunks, so a file without any line end does not become one huge read."""
    pending = b""
    consumed = 0  # bytes of the stream before `pending`
    while True:
        chunk = handle.read(chunk_size)
        if not chunk:
            break
        pending += chunk
        # a CR at the end may be the first half of a CRLF: keep it for the next chunk
        end = len(pending) - 1 if pending.endswith(b"\r") else len(pending)
        start = 0
        for match in _LINE_END.finditer(pending, 0, end):
            yield consumed + start, pending[start : match.start()]
            start = match.end()
        pending = pending[start:]
        consumed += start
    if pending:  # the last line: no line end in it but perhaps a final CR
        yield consumed, pending[:-1] if pending.endswith(b"\r") else pending


def decode_line(path: PathLike, line_number: int, raw: bytes) -> str:
    """Line `line_number` of `path` as text: UTF-8, a byte-order mark on line 1 dropped (as
    `utf-8-sig` does); anything else is a `FormatError` naming FILE:LINE."""
    if line_number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(f"{path}:{line_number}: not UTF-8 text ({error.reason})") from error


def numbered_lines(path: PathLike) -> Iterator[Tuple[int, str]]:
    """`(line_number, text)` of a UTF-8 (possibly gzip) file, lines split as Python's text mode
    splits them (LF, CRLF or CR), without their line ends; a UTF-8 byte-order mark at the start
    is dropped (as `utf-8-sig` does). Errors name the file and line."""
    line_number = 0
    with open_bytes(path) as handle:
        try:
            for line_number, (_, raw) in enumerate(raw_lines(handle), start=1):
                yield line_number, decode_line(path, line_number, raw)
        except (OSError, EOFError) as error:
            raise FormatError(f"{path}:{line_number + 1}: read failed ({error})") from error
