"""A real webhook receiver for the task tests: an HTTP server on 127.0.0.1:0 that answers 503 to the
first `fail_first` deliveries (or to all of them), then 204, and keeps every request it got."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    answered: int


@dataclass
class WebhookReceiver:
    fail_first: int = 0
    fail_always: bool = False
    deliveries: list[Delivery] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                failing = receiver.fail_always or len(receiver.deliveries) < receiver.fail_first
                code = 503 if failing else 204
                receiver.deliveries.append(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                    body, time.monotonic(), code))
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def for_path(self, path: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.path == path]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
