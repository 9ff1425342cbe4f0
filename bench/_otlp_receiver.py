"""A discarding OTLP/HTTP receiver for the tracer benchmark, run as its own process so that its
CPU time is not charged to the agent run being measured. Prints its port, then serves until killed.

    python -m bench._otlp_receiver
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

_OK = ExportTraceServiceResponse().SerializeToString()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real collector

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(_OK)))
        self.end_headers()
        self.wfile.write(_OK)

    def log_message(self, *args: object) -> None:
        return None


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
