"""Small API calls over HTTP on a real server: one kept-alive connection against a new connection per call.

Why both: a small response on a reused connection used to wait ~44 ms for Nagle + the client's
delayed ACK (the listener lacked IPPROTO_TCP, so asyncio never set TCP_NODELAY), while a fresh
connection answered in under 1 ms. The dashboards, the CLI and every API client keep connections
alive, so the kept-alive p50 is the figure.

The server is `steplens serve` in its own process (the calls' client would otherwise share its GIL).
The reference, measured in the same run on the same store just before the server starts and again
after it stops (the store's file lock allows one process): the least any server must do for the
answer, the page's rows read by one bare DuckDB Top-N on a read cursor opened with the server's
settings (`ORDER BY start_time DESC LIMIT 50`, no tie-breakers, no cursor) and encoded as JSON, no
HTTP. `/api/runs` over it is what the route adds (HTTP, parameters, the tie-broken keyset page,
scores, validation). Beside it, the page statement the route ran before its threshold window (one
full sort of the coalesced key), read the same way, for scale. A fresh store's search index is built
by the server in its writer thread; the calls wait until it has caught up, and until the alert
evaluator's first pass over the store is done, so neither competes for the CPU in the figures.

Beside each kept-alive p50, the server process's CPU time per call (user + system, from /proc over
the same 50 calls): on 2 cores shared with other work the wall-clock p50 moves with the machine's
load, the CPU a call costs the server much less.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from ingest.config import Settings
from ingest.metrics import IngestMetrics
from ingest.queries.runs import RUN_SELECT, SORT_KEYS, RunFilters, runs_where
from ingest.server import ServerStack, query_routers
from ingest.store import SpanStore
from ingest.store.database import cursor, open_database
from ingest.store.reader import timed_cursor

ROOT = Path(__file__).resolve().parents[1]

CALLS = 50
TARGET_KEEPALIVE_MS = 10.0
PATHS = ("/healthz", "/api/runs?limit=50")
# other small answers a page or client asks for, timed the same way (no target: what they cost now)
OTHER_PATHS = ("/readyz", "/api/runs?limit=1", "/api/runs?limit=50&sort=duration_ms", "/api/overview?since=24h",
               "/api/overview?since={week_before}&until={newest}", "/api/search/status", "/api/traces/{trace_id}")
INDEX_WAIT_S = 3600.0
# full-text searches over the whole store (top 20, as the search page asks): fewer calls, each is larger
SEARCH_PATHS = ("/api/search?q=timed%20out", "/api/search?q=refund")
SEARCH_CALLS = 11


def _p50_ms(call: Callable[[], Any], calls: int = CALLS) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _cpu_ms(pid: int) -> float:
    """CPU time (user + system) process `pid` has used so far, in ms (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _p50_and_cpu_ms(call: Callable[[], Any], pid: int) -> tuple[float, float]:
    """(p50 wall-clock ms of CALLS calls, the server's CPU ms per call over them)."""
    before = _cpu_ms(pid)
    p50 = _p50_ms(call)
    return p50, (_cpu_ms(pid) - before) / CALLS


def _ok(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text[:200]


@contextmanager
def running_server(db: Path) -> Iterator[str]:
    """A real server (`steplens serve`'s wiring, free port) over `db` in this process; yields its base URL."""
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


def wait_for_search_index(client: httpx.Client) -> None:
    """Until the server's search index holds every stored span (a fresh store's is built on start)."""
    t0 = time.monotonic()
    last = 0.0
    while time.monotonic() - t0 < INDEX_WAIT_S:
        status = client.get("/api/search/status").json()  # 501 (no index on this store): nothing to wait for
        if not status.get("rebuilding") and not status.get("pending_spans"):
            return
        if time.monotonic() - last >= 30:
            last = time.monotonic()
            print(f"  waiting for the search index to catch up ({time.monotonic() - t0:.0f} s): {status}", flush=True)
        time.sleep(2)
    print(f"  the search index did not catch up within {INDEX_WAIT_S:.0f} s: figures include its build", flush=True)


def wait_for_first_alert_pass(client: httpx.Client) -> None:
    """Until the alert evaluator has evaluated every rule once: at start it runs the built-in rules over
    the whole store at once, which is not what a call meets on a server that has been up a while."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < INDEX_WAIT_S:
        answer = client.get("/api/alerts")
        if answer.status_code == 501:  # no alert evaluator on this store (ClickHouse: the worker's job)
            return
        rules = answer.json()["rules"]
        if all(r["last_evaluated"] is not None for r in rules):
            return
        time.sleep(1)
    print("  the alert evaluator did not finish its first pass: figures include it", flush=True)


@contextmanager
def server_process(db: Path, chdb: Path | None = None) -> Iterator[tuple[str, int]]:
    """`steplens serve` over `db` in its own process on a free port; yields its base URL and pid. With
    `chdb`, on the ClickHouse store in that chDB directory (`db` then only names the spool's place)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = db.with_name(db.name + ".bench-serve.log")
    store = ["--store", "clickhouse", "--clickhouse-url", f"chdb://{chdb}"] if chdb is not None else []
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "steplens.cli", "serve", "--port", str(port), "--grpc-port", "0", "--db", str(db),
             *store],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=out,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 300
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"steplens serve exited with {proc.returncode}; see {log}")
                try:
                    if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"steplens serve not ready within 300 s; see {log}")
                time.sleep(0.2)
            yield url, proc.pid
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def references(db: Path) -> tuple[float, float]:
    """(bare Top-N + JSON p50, the full-sort page statement of before + JSON p50) in ms, on a read-only
    connection with the server's DuckDB settings and a cursor per call, as the server reads."""
    where = runs_where(RunFilters())
    key = SORT_KEYS["start_time"].expression
    bare = f"SELECT {RUN_SELECT} FROM runs WHERE {where.sql()} ORDER BY start_time DESC LIMIT 50"
    full_sort = (f"SELECT {RUN_SELECT}, {key} AS _sort_key FROM runs WHERE {where.sql()} "
                 "ORDER BY _sort_key DESC, trace_id DESC, project DESC LIMIT 51")
    conn = open_database(db, Settings(db=db), read_only=True)
    try:
        def p50(sql: str) -> float:
            def once() -> None:
                with timed_cursor(cursor(conn), 10.0) as cur:
                    cur.execute(sql, where.params)
                    names = [d[0] for d in cur.description]
                    json.dumps([dict(zip(names, r, strict=True)) for r in cur.fetchall()], default=str)
            once()
            return _p50_ms(once)
        return p50(bare), p50(full_sort)
    finally:
        conn.close()


@dataclass
class Figures:
    calls: list[tuple[str, float, float, float]]  # (path, kept-alive p50 ms, server CPU ms per call, new-connection p50 ms)
    others: list[tuple[str, float, float, int]]  # (path, kept-alive p50 ms, server CPU ms per call, bytes)
    reference_ms: tuple[float, float]  # the page's rows by a bare Top-N + JSON, before and after the server
    full_sort_ms: float  # the page statement before the window + JSON


def measure(db: Path, chdb: Path | None = None) -> Figures:
    """The figures of PATHS, OTHER_PATHS and the references, on `steplens serve` over `db` (with
    `chdb`: over that ClickHouse store; the DuckDB references are then not measured, NaN)."""
    before, full_sort = references(db) if chdb is None else (float("nan"), float("nan"))
    calls, others = [], []
    with server_process(db, chdb) as (url, pid), httpx.Client(base_url=url, timeout=30) as kept:
        wait_for_search_index(kept)
        wait_for_first_alert_pass(kept)
        for path in PATHS:
            kept.get(path)  # warm the connection and the query
            alive, cpu = _p50_and_cpu_ms(lambda: _ok(kept.get(path)), pid)  # noqa: B023 - called within the iteration
            fresh = _p50_ms(lambda: _ok(httpx.get(url + path, timeout=30)))  # noqa: B023
            calls.append((path, alive, cpu, fresh))
        newest = kept.get("/api/runs?limit=1").json()["runs"][0]
        until = datetime.fromisoformat(newest["start_time"])
        values = {"trace_id": newest["trace_id"], "newest": quote(until.isoformat()),
                  "week_before": quote((until - timedelta(days=7)).isoformat())}  # the store's last 7 days
        for path in OTHER_PATHS:
            path = path.format(**values)
            first = kept.get(path)
            if first.status_code != 200:  # e.g. 501: not available on this store
                others.append((f"{path} ({first.status_code})", float("nan"), float("nan"), len(first.content)))
                continue
            alive, cpu = _p50_and_cpu_ms(lambda: _ok(kept.get(path)), pid)  # noqa: B023
            others.append((path, alive, cpu, len(first.content)))
        for path in SEARCH_PATHS:
            first = kept.get(path)
            if first.status_code != 200:
                others.append((f"{path} ({first.status_code})", float("nan"), float("nan"), len(first.content)))
                continue
            hits = len(first.json().get("results", []))
            alive = _p50_ms(lambda: _ok(kept.get(path)), SEARCH_CALLS)  # noqa: B023
            others.append((f"{path} ({hits} hits, p50 of {SEARCH_CALLS})", alive, float("nan"), len(first.content)))
    after, _ = references(db) if chdb is None else (float("nan"), float("nan"))
    return Figures(calls, others, (before, after), full_sort)


def report(db: Path, chdb: Path | None = None) -> int:
    """Print the figures and their ratios; 1 when a kept-alive p50 misses the target. With `chdb`:
    the server on that ClickHouse store (no DuckDB reference)."""
    failed = 0
    store = "clickhouse (chDB)" if chdb is not None else "duckdb"
    print(f"  {store}: sequential small calls over HTTP ({CALLS} each, p50):", flush=True)
    figures = measure(db, chdb)
    bare, full_sort = statistics.mean(figures.reference_ms), figures.full_sort_ms
    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; server CPU = the server process's "
          "user + system time per call)", flush=True)
    for path, alive, cpu, fresh in figures.calls:
        ok = alive <= TARGET_KEEPALIVE_MS
        failed += not ok
        ref = f"   {alive / bare:4.2f}x the reference" if path.startswith("/api/runs") else ""
        print(f"    {path:<22} kept-alive {alive:6.2f} ms (server CPU {cpu:5.2f} ms)   new connection {fresh:6.2f} ms{ref}   "
              f"target {TARGET_KEEPALIVE_MS:.0f} ms   {'ok' if ok else 'OVER'}",
              flush=True)
    before, after = figures.reference_ms
    print(f"    reference: the page's rows by a bare DuckDB Top-N + JSON, no HTTP   {bare:6.2f} ms "
          f"(mean of {before:.2f} before the server, {after:.2f} after)", flush=True)
    print(f"    the page statement before the window (full sort) + JSON, no HTTP   {full_sort:6.2f} ms", flush=True)
    print("  other small answers, kept-alive p50 (no target):", flush=True)
    for path, alive, cpu, size in figures.others:
        shown = path if len(path) <= 40 or path.startswith("/api/search?") else path[:37] + "..."
        print(f"    {shown:<40} {alive:7.2f} ms (server CPU {cpu:5.2f} ms)   {size:7,} bytes", flush=True)
    return failed
