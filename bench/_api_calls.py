"""Small API calls over HTTP on a real server: one kept-alive connection against a new connection per call.

Why both: a small response on a reused connection used to wait ~44 ms for Nagle + the client's
delayed ACK (the listener lacked IPPROTO_TCP, so asyncio never set TCP_NODELAY), while a fresh
connection answered in under 1 ms. The dashboards, the CLI and every API client keep connections
alive, so the kept-alive p50 is the figure.

The reference, measured in the same run on the same server's store: the least any server must do for
the answer, the page's rows read by one bare DuckDB Top-N on a read cursor of the server's store
(`ORDER BY start_time DESC LIMIT 50`, no tie-breakers, no cursor) and encoded as JSON, with no HTTP.
`/api/runs` over it is what the route adds (HTTP, parameters, the tie-broken keyset page, scores,
validation). Beside it, the page statement the route ran before its threshold window (one full
sort of the coalesced key), read the same way, for scale. A fresh store's search index is built by
the server in its writer thread; the calls wait until it has caught up, so an index build competing
for the CPU is not in the figure.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ingest.config import Settings
from ingest.metrics import IngestMetrics
from ingest.queries.runs import RUN_SELECT, SORT_KEYS, RunFilters, runs_where
from ingest.server import ServerStack, query_routers
from ingest.store import SpanStore

CALLS = 50
TARGET_KEEPALIVE_MS = 10.0
PATHS = ("/healthz", "/api/runs?limit=50")
# other small answers a page or client asks for, timed the same way (no target: what they cost now)
OTHER_PATHS = ("/readyz", "/api/runs?limit=1", "/api/runs?limit=50&sort=duration_ms", "/api/overview?since=24h",
               "/api/search/status", "/api/traces/{trace_id}")
INDEX_WAIT_S = 3600.0


def _p50_ms(call: Callable[[], Any]) -> float:
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _ok(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text[:200]


@dataclass
class Served:
    """A running server: its base URL and its store (for the in-process reference reads)."""

    url: str
    store: SpanStore


@contextmanager
def serving(db: Path) -> Iterator[Served]:
    """A real server (`steplens serve`'s wiring, free port) over `db`."""
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
        yield Served(stack.http_url, store)
    finally:
        stack.request_stop()
        thread.join(30)
        store.stop()


@contextmanager
def running_server(db: Path) -> Iterator[str]:
    """A real server over `db`; yields its base URL."""
    with serving(db) as served:
        yield served.url


def wait_for_search_index(client: httpx.Client) -> None:
    """Until the server's search index holds every stored span (a fresh store's is built on start)."""
    t0 = time.monotonic()
    last = 0.0
    while time.monotonic() - t0 < INDEX_WAIT_S:
        status = client.get("/api/search/status").json()
        if not status.get("rebuilding") and not status.get("pending_spans"):
            return
        if time.monotonic() - last >= 30:
            last = time.monotonic()
            print(f"  waiting for the search index to catch up ({time.monotonic() - t0:.0f} s): {status}", flush=True)
        time.sleep(2)
    print(f"  the search index did not catch up within {INDEX_WAIT_S:.0f} s: figures include its build", flush=True)


def _read_json_ms(store: SpanStore, sql: str, params: list[object]) -> float:
    """p50 of reading `sql` on a read cursor of the store and encoding its rows as JSON (no HTTP)."""

    def once() -> None:
        with store.read() as cur:
            cur.execute(sql, params)
            names = [d[0] for d in cur.description]
            json.dumps([dict(zip(names, r, strict=True)) for r in cur.fetchall()], default=str)

    once()
    return _p50_ms(once)


def references(store: SpanStore) -> tuple[float, float]:
    """(bare Top-N + JSON p50, the full-sort page statement of before + JSON p50), in ms."""
    where = runs_where(RunFilters())
    key = SORT_KEYS["start_time"].expression
    bare = f"SELECT {RUN_SELECT} FROM runs WHERE {where.sql()} ORDER BY start_time DESC LIMIT 50"
    full_sort = (f"SELECT {RUN_SELECT}, {key} AS _sort_key FROM runs WHERE {where.sql()} "
                 "ORDER BY _sort_key DESC, trace_id DESC, project DESC LIMIT 51")
    return _read_json_ms(store, bare, where.params), _read_json_ms(store, full_sort, where.params)


@dataclass
class Figures:
    calls: list[tuple[str, float, float]]  # (path, kept-alive p50 ms, new-connection p50 ms)
    others: list[tuple[str, float, int]]  # (path, kept-alive p50 ms, bytes)
    reference_ms: float  # the page's rows by a bare Top-N + JSON
    full_sort_ms: float  # the page statement before the window + JSON


def measure(db: Path) -> Figures:
    """The figures of PATHS, OTHER_PATHS and the references, on a server over `db`."""
    with serving(db) as served:
        calls, others = [], []
        with httpx.Client(base_url=served.url, timeout=30) as kept:
            wait_for_search_index(kept)
            for path in PATHS:
                kept.get(path)  # warm the connection and the query
                alive = _p50_ms(lambda: _ok(kept.get(path)))  # noqa: B023 - called within the iteration
                fresh = _p50_ms(lambda: _ok(httpx.get(served.url + path, timeout=30)))  # noqa: B023
                calls.append((path, alive, fresh))
            trace_id = kept.get("/api/runs?limit=1").json()["runs"][0]["trace_id"]
            for path in OTHER_PATHS:
                path = path.format(trace_id=trace_id)
                size = len(kept.get(path).content)
                others.append((path, _p50_ms(lambda: _ok(kept.get(path))), size))  # noqa: B023
        return Figures(calls, others, *references(served.store))


def report(db: Path) -> int:
    """Print the figures and their ratios; 1 when a kept-alive p50 misses the target."""
    failed = 0
    print(f"  sequential small calls over HTTP ({CALLS} each, p50):", flush=True)
    figures = measure(db)
    bare, full_sort = figures.reference_ms, figures.full_sort_ms
    for path, alive, fresh in figures.calls:
        ok = alive <= TARGET_KEEPALIVE_MS
        failed += not ok
        ref = f"   {alive / bare:4.2f}x the reference" if path.startswith("/api/runs") else ""
        print(f"    {path:<22} kept-alive {alive:6.2f} ms   new connection {fresh:6.2f} ms{ref}   "
              f"target {TARGET_KEEPALIVE_MS:.0f} ms   {'ok' if ok else 'OVER'}",
              flush=True)
    print(f"    reference: the page's rows by a bare DuckDB Top-N + JSON, no HTTP   {bare:6.2f} ms", flush=True)
    print(f"    the page statement before the window (full sort) + JSON, no HTTP   {full_sort:6.2f} ms", flush=True)
    print("  other small answers, kept-alive p50 (no target):", flush=True)
    for path, alive, size in figures.others:
        shown = path if len(path) <= 40 else path[:37] + "..."
        print(f"    {shown:<40} {alive:7.2f} ms   {size:7,} bytes", flush=True)
    return failed
