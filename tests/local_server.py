"""An HTTP server on 127.0.0.1 (a free port) in a daemon thread: the tests' stand-in for the
network (download tests never reach the internet)."""

import http.server
import threading
from typing import Callable, Type


class LocalServer:
    """`_start(Handler)` serves `Handler` at `self.url`; `stop()` shuts it down."""

    url: str

    def _start(self, handler: Type[http.server.BaseHTTPRequestHandler]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @classmethod
    def started(cls, handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> "LocalServer":
        """A server of `handler` (a handler class, or a callable building one), started."""
        server = cls()
        server._start(handler)  # type: ignore[arg-type]
        return server

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
