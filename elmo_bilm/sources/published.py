"""The ELMo biLMs AllenNLP published, by URL or by name, downloaded once into a local cache.

Scripts written for AllenNLP name the published weights by URL (`Elmo(options_url, weight_url,
...)`); AllenNLP fetched them through `cached_path`. Here an `http(s)` URL given for a biLM file
is downloaded once into `$ELMO_BILM_CACHE` (default `~/.cache/elmo_bilm`), written atomically
(an interrupted download leaves nothing a later run could mistake for the file), with a progress
bar, checked against the server's announced length (a short read is retried) and against the
kind of file the URL names (an HTML page or an unreadable HDF5 file is not cached), recorded
beside it (`NAME.meta.json`: Content-Length, ETag, SHA-256) and checked against that record on
use, and reused from then on without the network. The four published biLMs also have names, accepted wherever an
options file is: `small`, `medium`, `original`, `original_5.5b` (the weight file then omitted),
and so do this project's: `wikipedia` (shipped with the core), `wikipedia_1024` and
`wikipedia_1024_256` (the distributions `elmo-bilm-wikipedia-1024` and
`elmo-bilm-wikipedia-1024-256`); a Hugging Face Hub repository is `hf://ORG/REPO`
(`elmo_bilm.sources.hub`).

A server that stops answering is given up on after the read timeout, the environment variable
`ELMO_BILM_DOWNLOAD_TIMEOUT` (seconds, default 15; read at each download, as
`HF_HUB_DOWNLOAD_TIMEOUT` is by the Hub's client): a connect, or a read once the headers came,
that waits that long ends the try, and a timed-out download is tried again only while its
timed-out waits stay within `STALL_BUDGET_S` (60 s) in all: 3 tries at the default, 1 at 60 s or
more. A URL naming an archive (`.zip`, `.tar.gz`, `.tgz`, `.tar`) must arrive readable (a zip's
central directory, every tar header) to be cached.
"""

import contextlib
import errno
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

try:
    import fcntl
except ImportError:  # not on Windows: no lock between processes there
    fcntl = None  # type: ignore[assignment]


from elmo_bilm.sources.archives import BILM_ARCHIVE_SUFFIXES
from elmo_bilm.utils.files import UsageError, atomic_output, cache_dir, sha256_files
from elmo_bilm.utils.names import is_url as is_url  # published.is_url, as before
from elmo_bilm.utils.names import url_file_name
from elmo_bilm.utils.progress import progress_bar

logger = logging.getLogger(__name__)

BASE_URL = "https://allennlp.s3.amazonaws.com/models/elmo"
# name -> the model folder AllenNLP published it under (Peters et al. 2018 and AllenNLP's ELMo page)
PUBLISHED: Dict[str, str] = {
    "small": "2x1024_128_2048cnn_1xhighway",
    "medium": "2x2048_256_2048cnn_1xhighway",
    "original": "2x4096_512_2048cnn_2xhighway",
    "original_5.5b": "2x4096_512_2048cnn_2xhighway_5.5B",
}
# flair's model names and the biLMs they stand for (`elmo_bilm.dropins.flair`): AllenNLP's
# published names, and the files AllenNLP's contributors published
FLAIR_NAMES: Dict[str, str] = {"large": "original_5.5b", "5.5B": "original_5.5b"}
CONTRIBUTED: Dict[str, Tuple[str, str]] = {
    "pt": (
        f"{BASE_URL}/contributed/pt/elmo_pt_options.json",
        f"{BASE_URL}/contributed/pt/elmo_pt_weights.hdf5",
    ),
    "pubmed": (
        f"{BASE_URL}/contributed/pubmed/elmo_2x4096_512_2048cnn_2xhighway_options.json",
        f"{BASE_URL}/contributed/pubmed/elmo_2x4096_512_2048cnn_2xhighway_weights_PubMed_only.hdf5",
    ),
}
CONTRIBUTED["portuguese"] = CONTRIBUTED["pt"]
# SeqVec (Heinzinger et al. 2019), the protein biLM: where bio_embeddings downloads its two files
# from (its `utilities/defaults.yml`, key `seqvec`), and the names it caches them under, in
# `user_cache_dir("bio_embeddings")/seqvec/` (`bio_embeddings_cache`)
SEQVEC_BASE_URL = "http://data.bioembeddings.com/public/embeddings/embedding_models/seqvec"
SEQVEC_OPTIONS_URL = f"{SEQVEC_BASE_URL}/options.json"
SEQVEC_WEIGHTS_URL = f"{SEQVEC_BASE_URL}/weights.hdf5"
BIO_EMBEDDINGS_CACHE_FILES = ("options_file", "weights_file")
# TF-Hub's ELMo module, google/elmo versions 1-3, by the handles `hub.Module` takes for it: its
# tfhub.dev address and its Kaggle addresses (tfhub.dev's models moved to Kaggle in 2023). As
# tensorflow_hub's HTTP resolver does, the module is downloaded from the handle with the query
# TFHUB_COMPRESSED (a .tar.gz of the module's folder).
TFHUB_ELMO_URL = "https://tfhub.dev/google/elmo"  # + /VERSION
KAGGLE_ELMO_URL = "https://www.kaggle.com/models/google/elmo"  # + one of KAGGLE_ELMO_PATHS
KAGGLE_ELMO_PATHS = (
    "frameworks/TensorFlow1/variations/elmo/versions/{version}",
    "TensorFlow1/elmo/{version}",
)
TFHUB_ELMO_VERSIONS = (1, 2, 3)
TFHUB_COMPRESSED = "tf-hub-format=compressed"
ATTEMPTS = 3  # tries of a download that breaks off (a short read, a reset connection)
# The read timeout: connect, and each read; a server silent this long ends the try. The
# environment variable TIMEOUT_ENV, read at each download, overrides this default.
TIMEOUT_S = 15.0
TIMEOUT_ENV = "ELMO_BILM_DOWNLOAD_TIMEOUT"
# A timed-out download is tried again only while its timed-out waits, together, stay within this
# (a stall after the headers: 3 tries of 15 s, not 3 of 60 s)
STALL_BUDGET_S = 60.0
# A download must average MIN_RATE_BPS after a grace period: its deadline is GRACE_S +
# size / MIN_RATE_BPS (about 2 h for a 370 MB weights file), so a server that trickles a byte
# every few seconds, each read well within TIMEOUT_S, is not waited on forever. Without a
# Content-Length the average so far is checked against the same rate.
GRACE_S = 120.0
MIN_RATE_BPS = 50_000


def published_urls(name: str) -> Tuple[str, str]:
    """The options and weights URLs of a published biLM."""
    if name not in PUBLISHED:
        raise UsageError(f"unknown published biLM {name!r}; one of {', '.join(PUBLISHED)}")
    model = PUBLISHED[name]
    stem = f"{BASE_URL}/{model}/elmo_{model}"
    return f"{stem}_options.json", f"{stem}_weights.hdf5"


def tfhub_module_url(handle: str) -> Optional[str]:
    """The address of the compressed archive of TF-Hub's ELMo module that `handle` names (a
    tfhub.dev or Kaggle address of google/elmo, http or https, with or without a trailing `/`
    or a query such as `TFHUB_COMPRESSED`), or None when `handle` is no such address; a version
    of google/elmo other than `TFHUB_ELMO_VERSIONS` is a UsageError."""
    if not is_url(handle):
        return None
    address = handle.split("?", 1)[0].rstrip("/")
    version = r"(?P<version>[0-9]+)"

    def pattern(known: str) -> str:  # http or https, as hub.Module takes either
        escaped = re.escape(known.split("://", 1)[1]).replace(re.escape("{version}"), version)
        return "https?://" + escaped

    patterns = [pattern(f"{TFHUB_ELMO_URL}/{{version}}")]
    patterns += [pattern(f"{KAGGLE_ELMO_URL}/{path}") for path in KAGGLE_ELMO_PATHS]
    for expression in patterns:
        match = re.fullmatch(expression, address, re.IGNORECASE)
        if match is None:
            continue
        if int(match.group("version")) not in TFHUB_ELMO_VERSIONS:
            raise UsageError(
                f"{handle}: TF-Hub's google/elmo has versions "
                f"{', '.join(map(str, TFHUB_ELMO_VERSIONS))} (e.g. {TFHUB_ELMO_URL}/3)"
            )
        return f"{address}?{TFHUB_COMPRESSED}"
    return None


def bio_embeddings_cache() -> Path:
    """bio_embeddings' own cache folder of SeqVec (appdirs' `user_cache_dir("bio_embeddings")`
    on Linux: `$XDG_CACHE_HOME`, else `~/.cache`, then `bio_embeddings/seqvec`)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "bio_embeddings" / "seqvec"


def seqvec_files(
    asked: str = "SeqVecEmbedder() without files",
    instead: str = "pass model_directory= (a folder with options.json and weights.hdf5)",
) -> Tuple[str, Optional[str]]:
    """SeqVec's files, found as bio_embeddings finds them with none given: bio_embeddings' cache
    folder if it holds both (a bio_embeddings install downloaded them), else this package's
    download cache, downloading each file once from bio_embeddings' URL. Offline (or the server
    unreachable): an `OSError` of one line, beginning with what `asked` for SeqVec, naming every
    file that could not be fetched, where to place both, and what to do `instead`."""
    folder = bio_embeddings_cache()
    if all((folder / name).is_file() for name in BIO_EMBEDDINGS_CACHE_FILES):
        return str(folder), None
    options, weights = _seqvec((SEQVEC_OPTIONS_URL, SEQVEC_WEIGHTS_URL), asked, instead)
    return options, weights


def seqvec_options_file(
    asked: str = "SeqVecEmbedder(weights_file=...) without options_file",
    instead: str = "pass options_file=",
) -> str:
    """SeqVec's options file alone, as bio_embeddings fetches it for a `weights_file` given
    without one: bio_embeddings' cached `options_file` if there is one, else downloaded once
    into this package's cache (offline: an `OSError` of one line, as `seqvec_files`')."""
    cached = bio_embeddings_cache() / BIO_EMBEDDINGS_CACHE_FILES[0]
    if cached.is_file():
        return str(cached)
    return _seqvec((SEQVEC_OPTIONS_URL,), asked, instead)[0]


def _seqvec(urls: Tuple[str, ...], asked: str, instead: str) -> List[str]:
    """The local copies of SeqVec's `urls` (among its options' and weights'), each downloaded
    once; what cannot be fetched is one `OSError` naming each failure and where to save it."""
    found: List[str] = []
    errors: List[str] = []
    for url in urls:
        try:
            found.append(cached_path(url))
        except OSError as error:
            errors.append(" ".join(str(error).split()))
    if not errors:
        return found
    names = dict(zip((SEQVEC_OPTIONS_URL, SEQVEC_WEIGHTS_URL), BIO_EMBEDDINGS_CACHE_FILES))
    saves = " and ".join(f"{url} as {bio_embeddings_cache() / names[url]}" for url in urls)
    raise OSError(
        f"{asked} loads bio_embeddings' SeqVec, which is not cached yet: {'; '.join(errors)}; "
        f"save {saves} (bio_embeddings' own cache), or {instead}"
    )


def download_timeout() -> float:
    """The read timeout in seconds: `$ELMO_BILM_DOWNLOAD_TIMEOUT`, else `TIMEOUT_S`; a value
    that is not a positive number of seconds is a UsageError naming the variable."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise UsageError(
            f"{TIMEOUT_ENV}={raw!r}: expected the download read timeout in seconds, a number > 0 "
            f"(default {TIMEOUT_S:g})"
        )
    return seconds


def timed_out_tries(timeout: float) -> int:
    """How many tries a download whose every try times out gets: at most `ATTEMPTS`, and no
    more than keep their waits within `STALL_BUDGET_S` (at least one)."""
    return max(1, min(ATTEMPTS, int(STALL_BUDGET_S // timeout)))


# A second process fetching a URL that one is downloading waits for it this long (the deadline of
# a download of about 470 MB: longer than any published file's)
LOCK_TIMEOUT_S = 3 * 3600.0
# cache entries whose SHA-256 this process has checked, with the (size, mtime, inode) it had then
_verified: Dict[str, Tuple[int, int, int]] = {}


def cached_path(url: str) -> str:
    """The local copy of `url`, downloaded first if the cache lacks it; its name is the URL's
    last part behind a hash of the whole URL (two hosts' files of one name stay apart).

    Beside each entry, `NAME.meta.json` records what identifies the download (the URL, its
    Content-Length and ETag, the file's size and SHA-256); each process checks an entry's SHA-256
    against it on first use, and a changed or damaged entry is removed and downloaded again (or
    refused, naming the URL and the path, where it cannot be removed). A process fetching a URL
    that another is downloading waits for it (`NAME.lock`, at most `LOCK_TIMEOUT_S`)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / f"{digest}_{url_file_name(url)}"
    if path.is_file() and _damage(url, path) is None:
        return str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OSError(_unwritable(url, path, error)) from None
    with _locked(url, path):
        damage = _damage(url, path) if path.is_file() else None
        if path.is_file() and damage is None:  # another process downloaded it meanwhile
            return str(path)
        if damage is not None:
            _remove_damaged(url, path, damage)
        try:
            _download(url, path)
        except OSError as error:
            if damage is None:
                raise
            raise OSError(f"{error} (the cached copy was removed: {damage})") from None
    return str(path)


def _record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.meta.json")


def _damage(url: str, path: Path) -> Optional[str]:
    """Why the cache entry `path` is not what was downloaded from `url` (its size or SHA-256
    differ from its record), or None. An entry without a record (cached by an older version) is
    checked as a download is (`_content_problem`) and gets one, from the file as it is."""
    stat = path.stat()
    key = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if _verified.get(str(path)) == key:
        return None
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        record = None
    except (OSError, ValueError) as error:
        return f"its record {_record_path(path)} is unreadable ({error})"
    if record is None:
        problem = _content_problem(url, str(path), None)
        if problem is not None:
            return f"{problem}; cached without a record, by an older version"
    actual = sha256_files([path])
    if record is None:
        _write_record(path, {"url": url, "size": stat.st_size, "sha256": actual}, quiet=True)
    elif record.get("size") != stat.st_size:
        return f"{stat.st_size} bytes, {record.get('size')} were downloaded"
    elif record.get("sha256") != actual:
        return f"SHA-256 {actual}, the download's was {record.get('sha256')}"
    _verified[str(path)] = key
    return None


def _write_record(path: Path, record: Dict[str, Any], quiet: bool = False) -> None:
    """Write an entry's record atomically (over an older one); `quiet`: skip an unwritable cache."""
    try:
        with atomic_output(_record_path(path), overwrite=True) as partial:
            Path(partial).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    except OSError:
        if not quiet:
            raise


def _remove_damaged(url: str, path: Path, damage: str) -> None:
    """Remove a damaged cache entry and its record before it is downloaded again; one that
    cannot be removed is refused."""
    try:
        path.unlink()
        _record_path(path).unlink(missing_ok=True)
    except OSError as error:
        raise OSError(
            f"{url}: the cached copy {path} is not what was downloaded ({damage}); refusing it, "
            f"and it cannot be removed ({error.strerror or error}): delete it by hand"
        ) from None
    _verified.pop(str(path), None)
    logger.warning(
        "%s: the cached copy %s is not what was downloaded (%s); removed it, downloading again",
        url,
        path,
        damage,
    )


def _is_local_write_error(error: BaseException) -> bool:
    """A cache folder that cannot be written (read-only, no permission, full), not the network."""
    if isinstance(error, urllib.error.URLError):
        return False
    return isinstance(error, PermissionError) or getattr(error, "errno", None) in (
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
    )


def _unwritable(url: str, path: Path, error: BaseException) -> str:
    """One line for a cache folder that cannot take the download."""
    folder = path.parent
    reason = getattr(error, "strerror", None) or str(error)
    if getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        try:
            reason += f", {shutil.disk_usage(folder).free / 1e6:.1f} MB free"
        except OSError:
            pass
    return (
        f"{url}: cannot write the download cache {folder} ({reason}); nothing cached (set "
        "ELMO_BILM_CACHE to a writable folder with room for the file, or pass a local path)"
    )


@contextlib.contextmanager
def _locked(url: str, path: Path) -> Iterator[None]:
    """Hold `PATH.lock` (an exclusive `flock`) while the entry is checked and downloaded; a
    second process waits for the first, at most `LOCK_TIMEOUT_S`."""
    if fcntl is None:
        yield
        return
    lock = path.with_name(f"{path.name}.lock")
    try:
        handle = open(lock, "a")
    except OSError as error:
        if _is_local_write_error(error):
            raise OSError(_unwritable(url, path, error)) from None
        raise
    with handle:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        waiting = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waiting:
                    waiting = True
                    print(f"{url}: waiting for another process downloading it", file=sys.stderr)
                if time.monotonic() > deadline:
                    raise OSError(
                        f"{url}: another process has been downloading it for more than "
                        f"{LOCK_TIMEOUT_S:g} s (it holds {lock}); gave up waiting"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _ShortRead(OSError):
    """The connection closed before the announced number of bytes arrived."""


class _TooSlow(OSError):
    """The download passed its deadline (see `MIN_RATE_BPS`); not retried."""


class _BadContent(OSError):
    """What arrived is not the file the URL names (an HTML page, a truncated HDF5 file); not
    retried."""


def _is_timeout(error: BaseException) -> bool:
    """A connect or read that waited the read timeout (bare, or wrapped by urllib)."""
    return isinstance(error, TimeoutError) or isinstance(
        getattr(error, "reason", None), TimeoutError
    )


def _download(url: str, path: Path) -> None:
    timeout = download_timeout()
    last: Optional[BaseException] = None
    tries = timeouts = 0
    while tries < ATTEMPTS:
        tries += 1
        try:
            _fetch(url, path, timeout)
            return
        except urllib.error.HTTPError as error:  # the server answered: trying again won't help
            raise OSError(
                f"{url}: HTTP {error.code} {error.reason}; nothing cached in {cache_dir()}"
            ) from None
        except _TooSlow as error:
            raise OSError(
                f"{url}: download too slow ({error}); gave up, nothing cached in {cache_dir()} "
                f"(copy the file there as {path.name}, or pass a local path)"
            ) from None
        except _BadContent as error:
            raise OSError(
                f"{url}: {error}; the download was removed from the cache (nothing kept as {path})"
            ) from None
        except FileExistsError:
            if path.is_file():  # another process finished the same download meanwhile
                return
            raise
        except (urllib.error.URLError, OSError) as error:
            if _is_local_write_error(error):  # the cache folder, not the network: no retry
                raise OSError(_unwritable(url, path, error)) from None
            last = error
            if _is_timeout(error):
                timeouts += 1
                if timeouts >= timed_out_tries(timeout):  # the waits would pass STALL_BUDGET_S
                    break
    reason = getattr(last, "reason", None) or last
    if last is not None and _is_timeout(last):
        reason = f"no answer for {timeout:g} s, the read timeout {TIMEOUT_ENV}"
    raise OSError(
        f"{url}: download failed after {tries} {'try' if tries == 1 else 'tries'} ({reason}); "
        f"nothing cached in {cache_dir()} (offline? copy the file there as {path.name}, or pass "
        "a local path)"
    )


def _content_problem(url: str, partial: str, content_type: Optional[str]) -> Optional[str]:
    """What is wrong with a downloaded file, judged by the kind the URL names (an HTML page
    for any file but a page; an unreadable HDF5 or JSON file, zip or tar archive), or None.
    `content_type`: the server's Content-Type, None where it is not known (a cached file)."""
    name, _, query = url.partition("?")
    name = name.lower()
    if TFHUB_COMPRESSED in query.split("&"):  # a TF-Hub module's archive (a .tar.gz)
        name += ".tar.gz"
    with open(partial, "rb") as handle:
        head = handle.read(1024).lstrip().lower()
    if not name.endswith((".html", ".htm")) and (
        "html" in (content_type or "").lower() or head.startswith((b"<!doctype html", b"<html"))
    ):
        if content_type is None:
            return "the server sent an HTML page, not the file"
        return (
            f"the server sent an HTML page (Content-Type: {content_type or 'none'}), not the file"
        )
    if name.endswith((".hdf5", ".h5")):
        import h5py

        try:
            h5py.File(partial, "r").close()
        except OSError as error:
            return f"not a readable HDF5 file ({_first_line(error)})"
    elif name.endswith(".json"):
        try:
            with open(partial, encoding="utf-8") as handle:
                json.load(handle)
        except ValueError as error:
            return f"not a JSON file ({error})"
    elif name.endswith(".zip"):
        try:  # the central directory, at the end: a truncated zip lacks it
            with zipfile.ZipFile(partial) as archive:
                archive.infolist()
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            return f"not a readable zip archive ({_first_line(error)})"
    elif name.endswith(BILM_ARCHIVE_SUFFIXES):
        try:  # every header, to the end: a truncated tar (or its gzip stream) breaks off
            with tarfile.open(partial, "r:*") as archive:
                for _ in archive:
                    pass
        except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
            return f"not a readable tar archive ({_first_line(error)})"
    return None


def _first_line(error: BaseException) -> str:
    """An exception's message, its first line only (or its type's name where it has none)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _fetch(url: str, path: Path, timeout: float) -> None:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        announced = response.headers.get("Content-Length")
        total = int(announced) if announced is not None else None
        received = 0
        digest = hashlib.sha256()
        with (
            atomic_output(path) as partial,
            open(partial, "wb") as out,
            progress_bar(
                total=total,
                unit="B",
                unit_scale=True,
                desc=f"downloading {path.name.split('_', 1)[1]}",
            ) as progress,
        ):
            while True:
                chunk = response.read1(1 << 20)  # what has arrived: each read within `timeout`
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                progress.update(len(chunk))
                elapsed = time.monotonic() - started
                if elapsed > GRACE_S + (total if total is not None else received) / MIN_RATE_BPS:
                    raise _TooSlow(
                        f"{received} of {total if total is not None else '?'} bytes in "
                        f"{elapsed:.0f} s, under {MIN_RATE_BPS / 1000:g} kB/s"
                    )
            if total is not None and received != total:
                raise _ShortRead(f"received {received} of {total} bytes")
            out.flush()
            problem = _content_problem(url, partial, response.headers.get("Content-Type", ""))
            if problem is not None:
                raise _BadContent(problem)
            record = {
                "url": url,
                "content_length": total,
                "etag": response.headers.get("ETag"),
                "size": received,
                "sha256": digest.hexdigest(),
            }
            _write_record(path, record)  # before the file: an entry never lacks its record
    stat = path.stat()
    _verified[str(path)] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)


# biLMs of this project, by name: the one the core ships, and the larger ones, each a
# distribution of its own (elmo-bilm-wikipedia-1024, elmo-bilm-wikipedia-1024-256) so that the
# core wheel stays small
LOCAL = {
    "wikipedia": "elmo_bilm",
    "wikipedia_1024": "elmo_bilm_wikipedia_1024",
    "wikipedia_1024_256": "elmo_bilm_wikipedia_1024_256",
}


def names() -> List[str]:
    """Every biLM name (`elmo_bilm.sources.resolver` takes each alone)."""
    return [*LOCAL, *PUBLISHED]


def local_files(name: str) -> Tuple[str, str]:
    """The options and weights of one of this project's biLMs."""
    if name == "wikipedia":
        from elmo_bilm.sources.shipped import SHIPPED_OPTIONS_FILE, SHIPPED_WEIGHT_FILE

        return str(SHIPPED_OPTIONS_FILE), str(SHIPPED_WEIGHT_FILE)
    spec = importlib.util.find_spec(LOCAL[name])
    if spec is None or spec.origin is None:
        distribution = LOCAL[name].replace("_", "-")
        raise FileNotFoundError(
            f"the biLM {name!r} is a distribution of its own: pip install dist/{LOCAL[name]}-*.whl "
            f"(the wheel `make wheels` builds in the checkout; after a release: pip install "
            f"{distribution})"
        )
    folder = Path(spec.origin).parent
    return str(folder / "options.json"), str(folder / "weights.hdf5")
