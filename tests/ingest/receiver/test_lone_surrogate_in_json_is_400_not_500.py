"""OTLP/JSON holding a lone UTF-16 surrogate ("\\ud800") in a field name, `kind`, `status.code`, a
name, an attribute key or value is answered 400 with a reason saying where, in the request's own
encoding, and the keep-alive connection goes on serving; an escaped surrogate *pair* (an emoji) is
just text.

Before: protobuf's name lookups raised SystemError on such text: a 500 that reset the connection."""

from __future__ import annotations

import json
import socket

import pytest

TRACE_ID = "0102030405060708090a0b0c0d0e0f10"


def _doc(span_extra: bytes) -> bytes:
    """An OTLP/JSON body with one span; `span_extra` is spliced in as bytes, so escapes (and raw
    bytes) reach the server exactly as written."""
    return (
        b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + TRACE_ID.encode() + b'","spanId":"0102030405060708",'
        b'"name":"s","startTimeUnixNano":"1767268800000000000","endTimeUnixNano":"1767268801000000000"'
        + span_extra + b"}]}]}]}"
    )


LONE = {
    "field name": b',"\\ud800":1',
    "kind": b',"kind":"\\ud800"',
    "status.code": b',"status":{"code":"\\udfff"}',
    "attribute key": b',"attributes":[{"key":"\\ud800x","value":{"intValue":"1"}}]',
    "attribute value": b',"attributes":[{"key":"k","value":{"stringValue":"a\\udc00b"}}]',
    "raw surrogate bytes": b',"attributes":[{"key":"k","value":{"stringValue":"\xed\xa0\x80"}}]',
}


def _exchange(sock: socket.socket, body: bytes) -> tuple[int, bytes]:
    sock.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the keep-alive connection"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        rest += chunk
    return int(head.split()[1]), rest


@pytest.mark.parametrize("where", list(LONE))
def test_lone_surrogate_is_400_with_a_reason_and_the_connection_survives(start_ingest_server, where: str) -> None:
    server = start_ingest_server()
    _, port = server.http_url.rsplit(":", 1)
    with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as sock:
        status, body = _exchange(sock, _doc(LONE[where]))
        assert status == 400, body[:300]
        message = json.loads(body)["message"]
        assert "surrogate" in message and "spans[0]" in message
        # same socket: the keep-alive connection still serves the next export
        status, body = _exchange(sock, _doc(b',"attributes":[{"key":"k","value":{"stringValue":"\\ud83d\\ude00"}}]'))
        assert status == 200, body[:300]
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        assert cur.execute("SELECT attributes FROM spans").fetchall() == [('{"k":"😀"}',)]
