"""Accepted connections have TCP_NODELAY, so a small response on a kept-alive connection leaves at once.

The failure this covers: the HTTP listener was created without IPPROTO_TCP, so asyncio never set
TCP_NODELAY on accepted connections, and every small response on a reused connection (`/healthz`,
`/api/runs?limit=50`, what the dashboards and CLI do all the time) waited ~44 ms for Nagle plus the
client's delayed ACK, against 0.5 ms on a fresh connection.

Checked where it is decided: the server-side socket of a live keep-alive connection, found among this
process's own descriptors by its peer address, read with getsockopt; for HTTP and for gRPC.
"""

from __future__ import annotations

import os
import socket
import stat

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub


def _addr(sockaddr: tuple) -> tuple[str, int]:
    """(host, port) with an IPv4-mapped IPv6 host written as IPv4 (gRPC listens on AF_INET6)."""
    host = sockaddr[0].removeprefix("::ffff:")
    return host, sockaddr[1]


def _tcp_sockets() -> list[socket.socket]:
    """Duplicates of this process's connected TCP sockets (the caller closes them)."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if not stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            sock.getpeername()
        except OSError:
            sock.close()
            continue
        if sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6):
            out.append(sock)
        else:
            sock.close()
    return out


def _server_side_nodelay(client_address: tuple[str, int]) -> int:
    """TCP_NODELAY of this process's socket whose peer is `client_address` (the accepted one)."""
    sockets = _tcp_sockets()
    try:
        found = [s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sockets
                 if _addr(s.getpeername()) == client_address]
    finally:
        for sock in sockets:
            sock.close()
    assert found, f"no accepted socket with peer {client_address} in this process"
    return max(found)


def test_http_keep_alive_connection_has_nodelay(ingest_server) -> None:
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        for _ in range(3):  # the same pooled connection each time
            assert client.get("/healthz").status_code == 200
        stream = client.get("/healthz", extensions={}).extensions["network_stream"]
        local = _addr(stream.get_extra_info("socket").getsockname())
        assert _server_side_nodelay(local) != 0


def test_grpc_connection_has_nodelay(ingest_server) -> None:
    with grpc.insecure_channel(ingest_server.grpc_target) as channel:
        stub = TraceServiceStub(channel)
        stub.Export(ExportTraceServiceRequest(), timeout=10)
        host, port = ingest_server.grpc_target.rsplit(":", 1)
        sockets = _tcp_sockets()  # the channel's own connection: the one whose peer is the gRPC port
        peers = [_addr(s.getsockname()) for s in sockets if _addr(s.getpeername()) == (host, int(port))]
        for sock in sockets:
            sock.close()
        assert peers, "the gRPC channel's connection was not found"
        assert all(_server_side_nodelay(peer) != 0 for peer in peers)
