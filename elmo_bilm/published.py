"""The ELMo biLMs AllenNLP published, by URL or by name, downloaded once into a local cache.

Scripts written for AllenNLP name the published weights by URL (`Elmo(options_url, weight_url,
...)`); AllenNLP fetched them through `cached_path`. Here an `http(s)` URL given for a biLM file
is downloaded once into `$ELMO_BILM_CACHE` (default `~/.cache/elmo_bilm`), written atomically
(an interrupted download leaves nothing a later run could mistake for the file), with a progress
bar, checked against the server's announced length (a short read is retried), and reused from
then on without the network. The four published biLMs also have names, accepted wherever an
options file is: `small`, `medium`, `original`, `original_5.5b` (the weight file then omitted),
and so do this project's: `wikipedia` (shipped with the core) and `wikipedia_1024` (the
distribution `elmo-bilm-wikipedia-1024`); a Hugging Face Hub repository is `hf://ORG/REPO`
(`elmo_bilm.hub`).
"""

import hashlib
import importlib.util
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm import tqdm

from elmo_bilm.archives import bilm_archive_files, is_bilm_archive
from elmo_bilm.files import atomic_output
from elmo_bilm.hub import hub_files, is_hub_id

BASE_URL = "https://allennlp.s3.amazonaws.com/models/elmo"
# name -> the model folder AllenNLP published it under (Peters et al. 2018 and AllenNLP's ELMo page)
PUBLISHED: Dict[str, str] = {
    "small": "2x1024_128_2048cnn_1xhighway",
    "medium": "2x2048_256_2048cnn_1xhighway",
    "original": "2x4096_512_2048cnn_2xhighway",
    "original_5.5b": "2x4096_512_2048cnn_2xhighway_5.5B",
}
ATTEMPTS = 3  # tries of a download that breaks off (a short read, a reset connection)
TIMEOUT_S = 60.0  # connect, and each read: a server silent this long is given up on (retried)
# A download must average MIN_RATE_BPS after a grace period: its deadline is GRACE_S +
# size / MIN_RATE_BPS (about 2 h for a 370 MB weights file), so a server that trickles a byte
# every few seconds, each read well within TIMEOUT_S, is not waited on forever. Without a
# Content-Length the average so far is checked against the same rate.
GRACE_S = 120.0
MIN_RATE_BPS = 50_000


def published_urls(name: str) -> Tuple[str, str]:
    """The options and weights URLs of a published biLM."""
    if name not in PUBLISHED:
        raise ValueError(f"unknown published biLM {name!r}; one of {', '.join(PUBLISHED)}")
    model = PUBLISHED[name]
    stem = f"{BASE_URL}/{model}/elmo_{model}"
    return f"{stem}_options.json", f"{stem}_weights.hdf5"


def cache_dir() -> Path:
    """Where downloads are kept: `$ELMO_BILM_CACHE`, else `~/.cache/elmo_bilm`."""
    return Path(os.environ.get("ELMO_BILM_CACHE", Path.home() / ".cache" / "elmo_bilm"))


def is_url(path: Optional[str]) -> bool:
    return isinstance(path, str) and path.startswith(("http://", "https://"))


def cached_path(url: str) -> str:
    """The local copy of `url`, downloaded first if the cache lacks it; its name is the URL's
    last part behind a hash of the whole URL (two hosts' files of one name stay apart)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / f"{digest}_{url.rstrip('/').rsplit('/', 1)[-1]}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        _download(url, path)
    return str(path)


class _ShortRead(OSError):
    """The connection closed before the announced number of bytes arrived."""


class _TooSlow(OSError):
    """The download passed its deadline (see `MIN_RATE_BPS`); not retried."""


def _download(url: str, path: Path) -> None:
    last: Optional[BaseException] = None
    for _ in range(ATTEMPTS):
        try:
            _fetch(url, path)
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
        except FileExistsError:
            if path.is_file():  # another process finished the same download meanwhile
                return
            raise
        except (urllib.error.URLError, OSError) as error:
            last = error
    reason = getattr(last, "reason", None) or last
    if isinstance(reason, TimeoutError):
        reason = f"no answer for {TIMEOUT_S:g} s"
    raise OSError(
        f"{url}: download failed after {ATTEMPTS} tries ({reason}); nothing cached in "
        f"{cache_dir()} (offline? copy the file there as {path.name}, or pass a local path)"
    )


def _fetch(url: str, path: Path) -> None:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        announced = response.headers.get("Content-Length")
        total = int(announced) if announced is not None else None
        received = 0
        with (
            atomic_output(path) as partial,
            open(partial, "wb") as out,
            tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                desc=f"downloading {path.name.split('_', 1)[1]}",
                file=sys.stderr,
            ) as progress,
        ):
            while True:
                chunk = response.read1(1 << 20)  # what has arrived: each read within TIMEOUT_S
                if not chunk:
                    break
                out.write(chunk)
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


# biLMs of this project, by name: the one the core ships, and the larger one, a distribution of
# its own (elmo-bilm-wikipedia-1024) so that the core wheel stays small
LOCAL = {"wikipedia": "elmo_bilm", "wikipedia_1024": "elmo_bilm_wikipedia_1024"}


def names() -> List[str]:
    """Every biLM name `resolve` takes."""
    return [*LOCAL, *PUBLISHED]


def local_files(name: str) -> Tuple[str, str]:
    """The options and weights of one of this project's biLMs."""
    if name == "wikipedia":
        from elmo_bilm.shipped import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE

        return str(DEFAULT_OPTIONS_FILE), str(DEFAULT_WEIGHT_FILE)
    spec = importlib.util.find_spec(LOCAL[name])
    if spec is None or spec.origin is None:
        distribution = LOCAL[name].replace("_", "-")
        raise FileNotFoundError(
            f"the biLM {name!r} is a distribution of its own: pip install {distribution} "
            f"(the wheel `make wheels` builds: dist/{LOCAL[name]}-*.whl)"
        )
    folder = Path(spec.origin).parent
    return str(folder / "options.json"), str(folder / "weights.hdf5")


def resolve(options_file: Optional[str], weight_file: Optional[str]) -> Tuple[str, str]:
    """Local paths for a biLM named by files, URLs (downloaded into the cache) or a name in
    place of the options file (the weight file omitted or empty): one of this project's
    (`wikipedia`, `wikipedia_1024`) or AllenNLP's published ones."""
    weight_file = weight_file or None
    if is_hub_id(options_file) and weight_file is None:
        return hub_files(options_file)  # type: ignore[arg-type]
    if is_bilm_archive(options_file) and weight_file is None:
        return bilm_archive_files(options_file)  # type: ignore[arg-type]
    if options_file in LOCAL and weight_file is None:
        return local_files(options_file)
    if options_file in PUBLISHED and weight_file is None:
        options_file, weight_file = published_urls(options_file)
    if not options_file or weight_file is None:
        raise ValueError(
            f"options_file and weight_file go together (or a biLM's name alone: {', '.join(names())}; "
            "or a Hugging Face Hub repository alone: hf://ORG/REPO; or a .zip / .tar.gz alone)"
        )
    return tuple(cached_path(f) if is_url(f) else f for f in (options_file, weight_file))  # type: ignore[return-value]


def options_path(options_file: str) -> str:
    """The local options file of a path, URL or name (for the width a config needs)."""
    if is_hub_id(options_file):
        return hub_files(options_file)[0]
    if is_bilm_archive(options_file):
        return bilm_archive_files(options_file)[0]
    if options_file in LOCAL:
        return local_files(options_file)[0]
    if options_file in PUBLISHED:
        options_file = published_urls(options_file)[0]
    return cached_path(options_file) if is_url(options_file) else options_file
