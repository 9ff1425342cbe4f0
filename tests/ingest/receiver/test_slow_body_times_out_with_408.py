"""A client trickling its body (one byte at a time, forever) is answered 408 once
`body_read_timeout_s` has passed since its headers, the connection is closed and the timeout is
counted; OTLP routes answer in OTLP encoding, other routes with a JSON error; a body sent at
normal speed is unaffected.

Before: nothing timed the body out; such a client held its connection (and in-flight bytes) forever."""

from __future__ import annotations

import contextlib
import re
import socket
import time

import httpx
import pytest
from google.rpc.status_pb2 import Status

TIMEOUT_S = 1.5


@pytest.fixture
def server(start_ingest_server):
    return start_ingest_server(body_read_timeout_s=TIMEOUT_S)


def _trickle(port: int, path: str, content_type: str) -> tuple[bytes, float]:
    """Send headers promising 1000 bytes, then one byte every 0.3 s (never the whole body); return what
    the server answered (everything up to the connection's close) and the seconds it took."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=15)
    started = time.monotonic()
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        "Content-Length: 1000\r\n\r\n".encode()
    )
    sock.settimeout(0.3)
    answer = b""
    try:
        while time.monotonic() - started < 12:
            # Trickle until just before the deadline, then only listen: a byte sent after the server
            # closed would make the close a reset that can race the answer.
            if time.monotonic() - started < TIMEOUT_S - 0.3:
                with contextlib.suppress(OSError):
                    sock.sendall(b"x")
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:  # our next byte met the closed socket: the answer came first
                break
            if not chunk:
                break  # closed by the server
            answer += chunk
    finally:
        sock.close()
    return answer, time.monotonic() - started


def _metric(url: str) -> float:
    match = re.search(r"^steplens_body_read_timeouts_total (\S+)$", httpx.get(url + "/metrics").text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_trickled_otlp_body_gets_408_and_the_connection_is_closed(server) -> None:
    port = int(server.http_url.rsplit(":", 1)[1])
    answer, elapsed = _trickle(port, "/v1/traces", "application/x-protobuf")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer[:300]
    assert TIMEOUT_S <= elapsed < TIMEOUT_S + 8, elapsed  # closed by the server, not by our 12 s give-up
    assert b"connection: close" in head.lower()
    assert "body_read_timeout_s" in Status.FromString(body).message
    assert _metric(server.http_url) == 1
    assert server.store.stats().requests_submitted == 0


def test_trickled_body_to_another_route_gets_408_too(server) -> None:
    port = int(server.http_url.rsplit(":", 1)[1])
    answer, _ = _trickle(port, "/api/approvals", "application/json")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"body_timeout" in body
    assert _metric(server.http_url) == 1


def test_body_at_normal_speed_is_not_affected(server, make_request) -> None:
    r = httpx.post(
        server.http_url + "/v1/traces",
        content=make_request(3).SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
    )
    assert r.status_code == 200
    assert _metric(server.http_url) == 0
