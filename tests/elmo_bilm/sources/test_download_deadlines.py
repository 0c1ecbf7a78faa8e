"""Downloads end: a read timeout and an overall deadline (issue 55, case 8), against servers on
127.0.0.1 started here."""

import http.server
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from elmo_bilm.sources import published
from tests.local_server import LocalServer

ANNOUNCED = 2000  # bytes; the trickle would take 100 s to send them


class Server(LocalServer):
    """A local HTTP server whose answer is one of: `trickle` (headers, then a byte every 50 ms)
    or `silent` (headers, then nothing)."""

    def __init__(self, mode: str) -> None:
        stop = self.stop_event = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                self.send_response(200)
                self.send_header("Content-Length", str(ANNOUNCED))
                self.end_headers()
                self.wfile.flush()
                try:
                    while not stop.is_set():
                        if mode == "trickle":
                            self.wfile.write(b"x")
                            self.wfile.flush()
                        stop.wait(0.05)
                except OSError:  # the client gave up
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._start(Handler)

    def close(self) -> None:
        self.stop_event.set()
        self.stop()


@pytest.fixture
def short_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Deadlines of seconds, and an empty cache under `tmp_path`."""
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(published, "TIMEOUT_S", 0.5)
    monkeypatch.setattr(published, "GRACE_S", 1.0, raising=False)
    monkeypatch.setattr(published, "MIN_RATE_BPS", 1000, raising=False)
    return tmp_path / "cache"


def _download_within(url: str, seconds: float) -> Dict[str, Any]:
    """Run `cached_path(url)` in a thread; what it returned or raised, and when it ended."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            outcome["path"] = published.cached_path(url)
        except Exception as error:  # noqa: BLE001 (the test inspects it)
            outcome["error"] = error
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the download of {url} still waits after {seconds} s"
    return outcome


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    running = Server(request.param)
    yield running
    running.close()


@pytest.mark.parametrize("server", ["trickle"], indirect=True)
def test_a_trickling_server_meets_the_deadline(server: Server, short_limits: Path) -> None:
    url = f"{server.url}/elmo_weights.hdf5"
    outcome = _download_within(url, 15)
    error = outcome.get("error")
    assert isinstance(error, OSError), outcome
    message = str(error)
    assert message.startswith(f"{url}: download too slow (") and "\n" not in message
    assert "kB/s); gave up, nothing cached" in message
    assert outcome["seconds"] < 10  # the deadline: 1 s + 2000 B at 1 kB/s
    assert not short_limits.exists() or [p.suffix for p in short_limits.iterdir()] == [".lock"]


@pytest.mark.parametrize("server", ["silent"], indirect=True)
def test_a_silent_server_times_out_naming_the_wait(server: Server, short_limits: Path) -> None:
    url = f"{server.url}/elmo_options.json"
    outcome = _download_within(url, 15)
    message = str(outcome.get("error"))
    assert message.startswith(f"{url}: download failed after {published.ATTEMPTS} tries")
    assert "no answer for 0.5 s" in message
    assert not short_limits.exists() or [p.suffix for p in short_limits.iterdir()] == [".lock"]
