"""The download cache keeps what identifies each download and checks it on use (issue 55, case 6
and build item 3): a damaged entry is fetched again or refused, an HTML page or a truncated
HDF5 file is never cached, an unwritable cache says so, and a second process waits for the
first's download. Against servers on 127.0.0.1 started here."""

import http.server
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from elmo_bilm import ElmoEmbedder
from elmo_bilm.sources import published
from elmo_bilm.utils.files import sha256_files
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.local_server import LocalServer


class Server(LocalServer):
    """Serves `files` (path -> body, content type), with an ETag; `delay` seconds between
    chunks of 256 bytes (a slow server)."""

    def __init__(self) -> None:
        self.files: Dict[str, Tuple[bytes, str]] = {}
        self.requests: List[str] = []
        self.delay = 0.0
        # set: the last chunk waits for it (a download that lasts until the test says so)
        self.hold: Optional[threading.Event] = None
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                if self.path not in server.files:
                    self.send_error(404, "Not Found")
                    return
                body, kind = server.files[self.path]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", kind)
                self.send_header("ETag", f'"{len(body)}-etag"')
                self.end_headers()
                for start in range(0, len(body), 256):
                    if server.hold is not None and start + 256 >= len(body):
                        server.hold.wait(timeout=300)
                    self.wfile.write(body[start : start + 256])
                    self.wfile.flush()
                    time.sleep(server.delay)

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)

    def serve(self, path: str, body: bytes, kind: str = "application/octet-stream") -> str:
        self.files[path] = (body, kind)
        return self.url + path


@pytest.fixture
def server(tmp_path, monkeypatch):
    running = Server()
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(published, "_verified", {}, raising=False)
    yield running
    running.stop()


def test_the_cache_records_what_identifies_each_download(server, tmp_path):
    url = server.serve("/m/weights.hdf5", WEIGHT_FILE.read_bytes())
    path = Path(published.cached_path(url))
    record = json.loads(Path(f"{path}.meta.json").read_text())
    size = WEIGHT_FILE.stat().st_size
    assert record["url"] == url and record["content_length"] == size == record["size"]
    assert record["etag"] == f'"{size}-etag"'
    assert record["sha256"] == sha256_files([WEIGHT_FILE])


def test_a_flipped_bit_in_a_cached_file_is_fetched_again(server, tmp_path, caplog):
    options = server.serve("/m/options.json", OPTIONS_FILE.read_bytes())
    weights = server.serve("/m/weights.hdf5", WEIGHT_FILE.read_bytes())
    reference = ElmoEmbedder(OPTIONS_FILE, WEIGHT_FILE).embed_sentence(["The", "cat"])
    path = Path(published.cached_path(weights))
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x40  # one bit, in the last dataset's values
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same size and mtime
    getattr(published, "_verified", {}).clear()  # as a new process
    vectors = ElmoEmbedder(options, weights).embed_sentence(["The", "cat"])
    assert server.requests.count("/m/weights.hdf5") == 2
    assert path.read_bytes() == WEIGHT_FILE.read_bytes()
    assert (vectors == reference).all()
    assert "is not what was downloaded (SHA-256 " in caplog.text and str(path) in caplog.text
    # offline, a damaged copy is refused naming the URL and the cache path
    path.write_bytes(bytes(data))
    server.stop()
    with pytest.raises(OSError) as error:
        published.cached_path(weights)
    message = str(error.value)
    assert message.startswith(f"{weights}: download failed after 3 tries")
    assert "(the cached copy was removed: SHA-256 " in message and "\n" not in message
    assert not path.exists()


def test_an_html_page_or_a_truncated_hdf5_file_is_not_cached(server, tmp_path):
    page = b"<!DOCTYPE html><html><body>Sign in to continue</body></html>"
    html = server.serve("/login/weights.hdf5", page, "text/html; charset=utf-8")
    with pytest.raises(OSError) as error:
        published.cached_path(html)
    assert str(error.value).startswith(
        f"{html}: the server sent an HTML page (Content-Type: text/html; charset=utf-8), not the "
        "file; the download was removed from the cache (nothing kept as "
    )
    cut = server.serve("/cut/weights.hdf5", WEIGHT_FILE.read_bytes()[:3000])
    with pytest.raises(OSError, match=r"not a readable HDF5 file \(.*\); the download was removed"):
        published.cached_path(cut)
    assert server.requests.count("/cut/weights.hdf5") == 1  # not retried
    cached = [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")]
    assert cached == []


def test_an_entry_cached_without_a_record_is_checked_then_recorded(server, tmp_path):
    url = server.serve("/old/weights.hdf5", WEIGHT_FILE.read_bytes())
    path = Path(published.cached_path(url))
    Path(f"{path}.meta.json").unlink()  # as an older version left it
    path.write_bytes(WEIGHT_FILE.read_bytes()[:3000])  # and truncated
    published._verified.clear()
    assert (
        published.cached_path(url) == str(path) and server.requests.count("/old/weights.hdf5") == 2
    )
    assert path.read_bytes() == WEIGHT_FILE.read_bytes()
    Path(f"{path}.meta.json").unlink()  # a complete one gets its record on use, not fetched
    published._verified.clear()
    assert (
        published.cached_path(url) == str(path) and server.requests.count("/old/weights.hdf5") == 2
    )
    assert json.loads(Path(f"{path}.meta.json").read_text())["sha256"] == sha256_files([path])


def test_a_read_only_cache_folder_says_so(server, monkeypatch):
    url = server.serve("/m/options.json", OPTIONS_FILE.read_bytes())
    folder = Path("/sys/kernel")  # read-only even for root
    if not folder.is_dir() or os.access(folder, os.W_OK) and _writable(folder):
        pytest.skip("no read-only folder here")
    monkeypatch.setenv("ELMO_BILM_CACHE", str(folder))
    with pytest.raises(OSError) as error:
        published.cached_path(url)
    assert str(error.value).startswith(f"{url}: cannot write the download cache {folder} (")
    assert "ELMO_BILM_CACHE" in str(error.value) and "tries" not in str(error.value)
    assert server.requests == []


def _writable(folder: Path) -> bool:
    try:
        (folder / ".elmo_probe").touch()
    except OSError:
        return False
    (folder / ".elmo_probe").unlink()
    return True


FETCH = "import sys\nfrom elmo_bilm.sources import published\nprint(published.cached_path(sys.argv[1]))\n"


def test_a_full_cache_folder_says_so(server, tmp_path):
    url = server.serve("/m/weights.hdf5", WEIGHT_FILE.read_bytes())

    def limit() -> None:  # a file-size limit: EFBIG, as ENOSPC on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = subprocess.run(
        [sys.executable, "-c", FETCH, url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        preexec_fn=limit,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert f"{url}: cannot write the download cache {tmp_path / 'cache'} (" in last
    assert "File too large" in last and "MB free); nothing cached" in last
    assert server.requests == ["/m/weights.hdf5"]  # not retried


def test_a_second_process_waits_for_the_first_download(server, tmp_path):
    """The first download lasts until the second process has said it waits (no wall-time race:
    the server holds the last bytes back until then)."""
    body = WEIGHT_FILE.read_bytes()
    url = server.serve("/slow/weights.hdf5", body)
    server.hold = threading.Event()
    first = subprocess.Popen(
        [sys.executable, "-c", FETCH, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not server.requests and time.monotonic() < deadline:  # the first is downloading
        time.sleep(0.05)
    second = subprocess.Popen(
        [sys.executable, "-c", FETCH, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: List[str] = []

    def watch() -> None:  # the second's stderr, until it says it waits
        assert second.stderr is not None
        for line in second.stderr:
            said.append(line)
            if "waiting for another process" in line:
                break
        server.hold.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    watcher.join(timeout=300)
    server.hold.set()
    outputs = [process.communicate(timeout=300) for process in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0] and Path(outputs[0][0].strip()).read_bytes() == body
    assert server.requests == ["/slow/weights.hdf5"]
    assert f"{url}: waiting for another process downloading it\n" in said


def test_a_lock_held_past_the_timeout_is_one_line(server, tmp_path, monkeypatch):
    import fcntl

    url = server.serve("/m/options.json", OPTIONS_FILE.read_bytes())
    monkeypatch.setattr(published, "LOCK_TIMEOUT_S", 0.5)
    (tmp_path / "cache").mkdir()
    digest = published.hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    lock = tmp_path / "cache" / f"{digest}_options.json.lock"
    with open(lock, "a") as held:  # another download in progress
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(OSError) as error:
            published.cached_path(url)
    assert str(error.value) == (
        f"{url}: another process has been downloading it for more than 0.5 s (it holds {lock}); "
        "gave up waiting"
    )
    assert server.requests == []
    assert Path(published.cached_path(url)).read_bytes() == OPTIONS_FILE.read_bytes()
