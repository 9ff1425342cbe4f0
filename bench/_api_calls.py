"""Small API calls over HTTP on a real server: one kept-alive connection against a new connection per call.

Why both: a small response on a reused connection used to wait ~44 ms for Nagle + the client's
delayed ACK (the listener lacked IPPROTO_TCP, so asyncio never set TCP_NODELAY), while a fresh
connection answered in under 1 ms. The dashboards, the CLI and every API client keep connections
alive, so the kept-alive p50 is the figure; the fresh-connection p50 of the same run is its reference.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ingest.config import Settings
from ingest.metrics import IngestMetrics
from ingest.server import ServerStack, query_routers
from ingest.store import SpanStore

CALLS = 50
TARGET_KEEPALIVE_MS = 10.0
# /api/search/status: a small answer that counted the index's documents per call (~84 ms at 7.9M
# documents) before the count became a counter kept by the index's writes.
PATHS = ("/healthz", "/api/runs?limit=50", "/api/search/status")


def _p50_ms(send: object, path: str) -> float:
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        r = send(path)  # type: ignore[operator]
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, r.text[:200]
    return statistics.median(times)


@contextmanager
def running_server(db: Path) -> Iterator[str]:
    """A real server (`steplens serve`'s wiring, free port) over `db`; yields its base URL."""
    settings = Settings(db=db, host="127.0.0.1", grpc_port=0, normalize_processes=0)
    metrics = IngestMetrics()
    store = SpanStore(settings, metrics)
    store.start()
    stack = ServerStack(settings, store, metrics, query_routers(settings, store), ephemeral_ports=True,
                        log_level="warning")
    thread = threading.Thread(target=lambda: asyncio.run(stack.serve()), daemon=True)
    thread.start()
    try:
        if not stack.started.wait(120):
            raise RuntimeError("server did not start within 120 s")
        yield stack.http_url
    finally:
        stack.request_stop()
        thread.join(30)
        store.stop()


def measure(db: Path) -> list[tuple[str, float, float]]:
    """(path, kept-alive p50 ms, new-connection p50 ms) for each path, on a server over `db`."""
    with running_server(db) as url:
        out = []
        with httpx.Client(base_url=url, timeout=30) as kept:
            for path in PATHS:
                kept.get(path)  # warm the connection and the query
                alive = _p50_ms(kept.get, path)
                fresh = _p50_ms(lambda p: httpx.get(url + p, timeout=30), path)
                out.append((path, alive, fresh))
        return out


def report(db: Path) -> int:
    """Print the figures and their ratio; 1 when a kept-alive p50 misses the target."""
    failed = 0
    print(f"  sequential small calls over HTTP ({CALLS} each, p50):", flush=True)
    for path, alive, fresh in measure(db):
        ok = alive <= TARGET_KEEPALIVE_MS
        failed += not ok
        print(f"    {path:<22} kept-alive {alive:6.2f} ms   new connection {fresh:6.2f} ms   "
              f"ratio {alive / fresh:4.2f}   target {TARGET_KEEPALIVE_MS:.0f} ms   {'ok' if ok else 'OVER'}",
              flush=True)
    return failed
