"""A real HTTP webhook receiver on 127.0.0.1 (port 0) that answers a scripted list of statuses."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, statuses: list[int] | None = None, delay_s: float = 0.0) -> None:
        self.statuses = list(statuses or [])  # answered in order; 200 once exhausted
        self.delay_s = delay_s
        self.bodies: list[Any] = []
        self.answers: list[int] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with receiver._lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.bodies.append(json.loads(raw) if raw else None)
                    receiver.answers.append(status)
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (timeout test)
                    self.wfile.write(b"ok" if status == 200 else b"nope")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/B000/secret-token"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def wait_for(self, count: int, timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.bodies) >= count:
                    return True
            time.sleep(0.02)
        return False


@contextmanager
def receiver(statuses: list[int] | None = None, delay_s: float = 0.0) -> Iterator[Receiver]:
    r = Receiver(statuses, delay_s)
    r._thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()
