"""Tiny real OTLP/HTTP receivers on 127.0.0.1 (port 0) for the export tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Captured:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Sink:
    url: str
    requests: list[Captured] = field(default_factory=list)
    status: int = 200

    def decoded(self) -> list[ExportTraceServiceRequest]:
        out = []
        for r in self.requests:
            req = ExportTraceServiceRequest()
            req.ParseFromString(r.body)
            out.append(req)
        return out

    def spans(self) -> list:
        return [s for req in self.decoded() for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


@contextmanager
def otlp_sink(status: int = 200) -> Iterator[Sink]:
    """An HTTP server that stores every POST body and answers `status` (200 = a valid response)."""
    sink = Sink(url="", status=status)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            sink.requests.append(Captured(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            payload = ExportTraceServiceResponse().SerializeToString() if sink.status == 200 else b"nope"
            self.send_response(sink.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections (kernel backlog) but never answers a byte."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    try:
        yield s.getsockname()[1]
    finally:
        s.close()
