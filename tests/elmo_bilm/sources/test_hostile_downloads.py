"""Downloads from servers that misbehave (issue 67, download cases), against servers on
127.0.0.1 started here: a stall after the headers ends within the read timeout
(`ELMO_BILM_DOWNLOAD_TIMEOUT`) in one line; a truncated archive is not cached; an HTML page the
Hub sends for a file is not kept in the Hugging Face cache; a Hub mirror's ETag that is a path
is refused before `huggingface_hub` writes the blob it names."""

import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from elmo_bilm.sources import published
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.local_server import LocalServer


class Server(LocalServer):
    """Serves `files` (path -> bytes, with their length as Content-Length); a path in `stall`
    gets its headers, then nothing until the server stops."""

    def __init__(self) -> None:
        self.files: Dict[str, bytes] = {}
        self.stall: List[str] = []
        self.requests: List[str] = []
        stop = self.stopped = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                if self.path in server.stall:
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.flush()
                    stop.wait(120)
                    return
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)

    def close(self) -> None:
        self.stopped.set()
        self.stop()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    running = Server()
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(published.TIMEOUT_ENV, raising=False)
    monkeypatch.setattr(published, "_verified", {})
    yield running
    running.close()


def _cached(cache: Path) -> List[str]:
    """What the cache folder holds, but its lock files."""
    return [p.name for p in cache.iterdir() if p.suffix != ".lock"] if cache.exists() else []


# 1. a stall after the headers


def test_a_stall_after_the_headers_ends_within_the_read_timeout(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{server.url}/m/elmo_weights.hdf5"
    server.stall.append("/m/elmo_weights.hdf5")
    monkeypatch.setenv("ELMO_BILM_DOWNLOAD_TIMEOUT", "1")
    with pytest.raises(OSError) as error:  # the message's timeout is the setting's, not a clock's
        published.cached_path(url)
    message = str(error.value)
    assert message.startswith(f"{url}: download failed after ")
    assert "no answer for 1 s" in message and "ELMO_BILM_DOWNLOAD_TIMEOUT" in message
    assert "\n" not in message
    assert _cached(tmp_path / "cache") == []


def test_the_read_timeout_default_and_retries_stay_within_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(published.TIMEOUT_ENV, raising=False)
    assert published.download_timeout() == 15.0
    for setting, tries in (("15", 3), ("30", 2), ("45", 1), ("90", 1)):
        monkeypatch.setenv(published.TIMEOUT_ENV, setting)
        timeout = published.download_timeout()
        assert published.timed_out_tries(timeout) == tries
        assert tries == 1 or tries * timeout <= published.STALL_BUDGET_S
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv(published.TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=f"ELMO_BILM_DOWNLOAD_TIMEOUT={bad!r}: "):
            published.download_timeout()


# 2. a truncated archive


def _archive(suffix: str) -> bytes:
    """A small archive of the test biLM's two files."""
    buffer = io.BytesIO()
    if suffix == ".zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(OPTIONS_FILE, "options.json")
            archive.write(WEIGHT_FILE, "weights.hdf5")
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(OPTIONS_FILE, "options.json")
            archive.add(WEIGHT_FILE, "weights.hdf5")
    return buffer.getvalue()


@pytest.mark.parametrize("suffix", [".zip", ".tar.gz", ".tgz"])
def test_a_truncated_archive_is_not_cached(server: Server, tmp_path: Path, suffix: str) -> None:
    whole = _archive(suffix)
    url = server.url + f"/cut/elmo{suffix}"
    server.files[f"/cut/elmo{suffix}"] = whole[: len(whole) * 2 // 3]  # its length announced
    with pytest.raises(OSError) as error:
        published.cached_path(url)
    message = str(error.value)
    kind = "zip" if suffix == ".zip" else "tar"
    assert message.startswith(f"{url}: not a readable {kind} archive (")
    assert "; the download was removed from the cache" in message and "\n" not in message
    assert "model.tar.gz" not in message
    assert server.requests.count(f"/cut/elmo{suffix}") == 1  # not retried
    assert _cached(tmp_path / "cache") == []
    # the whole archive is cached
    server.files[f"/whole/elmo{suffix}"] = whole
    assert Path(published.cached_path(server.url + f"/whole/elmo{suffix}")).read_bytes() == whole


# 3. and 4. the Hub

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "someone/elmo-tiny"
HUB_FILES = {"options.json": OPTIONS_FILE.read_bytes(), "weights.hdf5": WEIGHT_FILE.read_bytes()}
PAGE = b"<!DOCTYPE html><html><body>Too many requests, try later</body></html>"


class Hub(LocalServer):
    """The Hub's routes that `snapshot_download` uses (the revision's metadata; HEAD and GET of
    each file's `resolve` URL); `pages` GETs of `weights.hdf5` answer an HTML page (its HEAD
    agrees), and `etag` / `linked_etag`, where set, replace the ETag / X-Linked-Etag headers."""

    def __init__(self) -> None:
        self.pages = 0
        self.etag: Optional[str] = None
        self.linked_etag: Optional[str] = None
        self.requests: List[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.path.startswith(f"/api/models/{REPO}/revision/"):
                    files = [{"rfilename": name} for name in HUB_FILES]
                    return json.dumps({"id": REPO, "sha": COMMIT, "siblings": files}).encode()
                prefix = f"/{REPO}/resolve/"
                if not self.path.startswith(prefix):
                    return b""
                name = self.path[len(prefix) :].split("/", 1)[1].split("?")[0]
                if name == "weights.hdf5" and hub.pages > 0:
                    return PAGE
                return HUB_FILES.get(name, b"")

            def _headers(self, body: bytes) -> None:
                self.send_response(200 if body else 404)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", hub.etag or f'"{hashlib.sha256(body).hexdigest()}"')
                if hub.linked_etag is not None:
                    self.send_header("X-Linked-Etag", hub.linked_etag)
                self.end_headers()

            def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
                self._headers(self._body())

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                hub.requests.append(self.path)
                body = self._body()
                if body is PAGE:
                    hub.pages -= 1
                self._headers(body)
                self.wfile.write(body)

        self._start(Handler)


@pytest.fixture
def hub() -> Iterator[Hub]:
    running = Hub()
    yield running
    running.stop()


FOLDER = """
import sys
from elmo_bilm.sources.hub import hub_folder
try:
    print(hub_folder(sys.argv[1]))
except OSError as error:
    print(f"ERROR {error}")
"""


def _hub_folder(hub: Hub, tmp_path: Path) -> List[str]:
    """`hub_folder("hf://REPO")` in a fresh process (huggingface_hub reads `HF_ENDPOINT` when
    imported), online against `hub`, its cache in `tmp_path / "hf"`; the lines it printed."""
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    env.pop("TRANSFORMERS_OFFLINE", None)
    env.update(HF_HUB_OFFLINE="0", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
    result = subprocess.run(
        [sys.executable, "-c", FOLDER, f"hf://{REPO}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_an_html_page_from_the_hub_is_not_kept(hub: Hub, tmp_path: Path) -> None:
    hub.pages = 1  # once, then the right file
    lines = _hub_folder(hub, tmp_path)
    assert len(lines) == 1 and lines[0].startswith(f"ERROR hf://{REPO}: the Hub's weights.hdf5 ")
    assert "the server sent an HTML page" in lines[0]
    assert "removed it from the Hugging Face cache" in lines[0]
    storage = tmp_path / "hf" / "hub" / "models--someone--elmo-tiny"
    kept = [p.read_bytes() for p in (storage / "blobs").iterdir() if p.is_file()]
    assert PAGE not in kept
    assert not (storage / "snapshots" / COMMIT / "weights.hdf5").exists()

    lines = _hub_folder(hub, tmp_path)  # the server is asked again, and now answers the file
    assert len(lines) == 1 and not lines[0].startswith("ERROR"), lines
    folder = Path(lines[0])
    assert (folder / "weights.hdf5").read_bytes() == WEIGHT_FILE.read_bytes()
    assert (folder / "options.json").read_bytes() == OPTIONS_FILE.read_bytes()
    assert sum(path.endswith("/weights.hdf5") for path in hub.requests) == 2


@pytest.mark.parametrize(
    "header, value",
    [
        ("etag", '"../../../../victim"'),
        ("etag", 'W/"..\\..\\..\\..\\victim"'),
        ("linked_etag", '"../../../../victim"'),
        ("linked_etag", "TMP_PATH/victim-absolute"),  # an absolute path
    ],
)
def test_a_hub_etag_that_is_a_path_is_refused(
    hub: Hub, tmp_path: Path, header: str, value: str
) -> None:
    setattr(hub, header, value.replace("TMP_PATH", str(tmp_path)))
    lines = _hub_folder(hub, tmp_path)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ERROR hf://{REPO}: the Hub's answer is unusable (")
    assert "etag" in lines[0].lower() and "not a plain token" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]  # nothing beside the cache
    hub_cache = tmp_path / "hf" / "hub"
    written = [p for p in hub_cache.rglob("*") if p.is_file() and "victim" in str(p)]
    assert written == []
