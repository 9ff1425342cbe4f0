"""Typical `POST /api/sql` aggregates, timed on the real SQL path (check + rewrite, project-bound
views, limits, the first batch, the JSON answer streamed to its end), in process and then over HTTP
on a real server (kept-alive connection, as the dashboards and `steplens sql` call it), as
`bench.query_bench --sql` runs them.

Why these: what a user asks the SQL page first: runs per agent and version with their p95 duration
and cost over the last 7 days (the runs view), LLM calls per model over the same days (the spans
view: ~a quarter of the store's spans scanned), and tool errors per tool and type (the tool_calls
view, 30 days). The times are bound to the store's own last 7 days as literals, as a user writes
them (a query takes no parameters).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import duckdb
import httpx

from ingest.sql.check import prepare
from ingest.sql.encode import JsonEncoder
from ingest.sql.run import SqlLimits, start
from ingest.store.database import cursor

TARGET_MS = 300.0
LIMITS = SqlLimits(timeout_s=30.0, max_rows=100_000, max_result_bytes=64 << 20, max_query_bytes=64 << 10)


def cases(since: datetime) -> list[tuple[str, str]]:
    ts = f"TIMESTAMP '{since.isoformat(sep=' ')}'"
    return [
        ("SQL runs per agent (7 d)",
         "SELECT agent, version, count(*) AS runs, count_if(NOT ok) AS failed, avg(steps) AS mean_steps, "
         "quantile_cont(duration_ms, 0.95) AS p95_ms, sum(cost_usd) AS cost_usd "
         f"FROM runs WHERE start_time >= {ts} GROUP BY ALL ORDER BY runs DESC"),
        ("SQL LLM calls per model (7 d)",
         "SELECT model, count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, "
         "quantile_cont(duration_ms, 0.95) AS p95_ms "
         f"FROM spans WHERE operation = 'llm' AND start_time >= {ts} GROUP BY model ORDER BY calls DESC"),
        ("SQL tool errors (30 d)",
         "SELECT tool_name, error_type, count(*) AS errors FROM tool_calls WHERE is_error GROUP BY ALL "
         "ORDER BY errors DESC"),
    ]  # fmt: skip


class _Store:
    """What the SQL path needs of the server's store: `read()` yielding a cursor."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn = conn

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = cursor(self.conn)
        try:
            yield cur
        finally:
            cur.close()


def run_once(store: _Store, sql: str, projects: frozenset[str] | None) -> int:
    prepared = prepare(sql, projects, LIMITS.max_rows, LIMITS.max_query_bytes)
    started = start(store, prepared, LIMITS, sql)
    return sum(len(chunk) for chunk in started.rows(JsonEncoder(started.columns, started.types)))


def _timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, p95) in ms of `repeat` calls after two warm-ups."""
    fn()
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18] if len(times) > 1 else times[0]
    return statistics.median(times), p95


def _line(name: str, median: float, p95: float) -> bool:
    ok = median <= TARGET_MS
    print(f"  {name:<38} median {median:7.1f} ms  p95 {p95:7.1f} ms   target {TARGET_MS:.0f} ms median   "
          f"{'ok' if ok else 'OVER'}", flush=True)
    return ok


def report(conn: duckdb.DuckDBPyConnection, until: datetime, repeat: int) -> int:
    """Print median and p95 of each case in process (bound to one project, as a read key is); return
    how many medians were over the target."""
    store = _Store(conn)
    project = conn.execute("SELECT project FROM runs LIMIT 1").fetchone()[0]
    over = 0
    for name, sql in cases(until - timedelta(days=7)):
        over += not _line(name, *_timed(lambda sql=sql: run_once(store, sql, frozenset({project})), repeat))
    return over


def http_report(url: str, until: datetime, repeat: int) -> int:
    """The same cases through `POST /api/sql` of a real server, one kept-alive connection."""
    over = 0
    with httpx.Client(base_url=url, timeout=60) as client:

        def call(sql: str) -> None:
            r = client.post("/api/sql", json={"sql": sql})
            assert r.status_code == 200 and r.json()["error"] is None, r.text[:300]

        for name, sql in cases(until - timedelta(days=7)):
            over += not _line(f"{name} HTTP", *_timed(lambda sql=sql: call(sql), repeat))
    return over


def typical_aggregate(conn: duckdb.DuckDBPyConnection, until: datetime) -> tuple[str, Callable[[int], object]]:
    """The issue's "typical SQL aggregate" as a `(name, fn(i))` case for bench/find_bench.py's
    `sql_aggregate_case` hook: LLM calls per model over the last 7 days (the spans view), bound to one
    project, on the real SQL path."""
    store = _Store(conn)
    project = frozenset({conn.execute("SELECT project FROM runs LIMIT 1").fetchone()[0]})
    name, sql = cases(until - timedelta(days=7))[1]
    return f"typical {name}", lambda _: run_once(store, sql, project)
