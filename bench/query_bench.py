"""Query latency of the analytics read path on a generated store (issue 5's benchmark).

    .venv/bin/python -m bench.query_bench [--spans 10000000] [--db PATH] [--repeat 15] [--keep] [--sql]

Builds (or reuses, with --db of an existing file, migrated to the current schema first) a DuckDB store of about `--spans` spans: template
runs through the real normalizer and loader, replicated in SQL (see bench/_query_data.py for why
and what that preserves), spread over 30 days. Then times, as the query API runs them (the same
functions from ingest/queries and ingest/api, on a cursor of one connection), the median of
`--repeat` runs after two warm-ups of:

  overview      totals + stop reasons + time series, last 7 days
  clusters      failure clusters with trends, last 7 days
  tool stats    per-tool stats + three-part cost, last 7 days
  cost by tool  the same through the cost report
  cost by model run_models grouped by model, last 7 days
  trace fetch   one run's row and all its spans (a different trace each repetition)

then starts a real server on the store and times 50 sequential `/healthz`, `/api/runs?limit=50` and
`/api/search/status`
calls on one kept-alive connection, against a new connection per call (bench/_api_calls.py).

`--sql` times typical `POST /api/sql` aggregates instead (bench/_sql_queries.py: median and p95 of
`--repeat` runs of the real SQL path, target a median under 300 ms).

Targets: each aggregate under 200 ms, trace fetch under 25 ms, kept-alive small calls p50 under 10 ms. Results go to stdout; record them
in docs/benchmarks.md with the command and the scale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bench._api_calls import report as api_calls_report  # noqa: E402
from bench._query_data import load_templates, replicate  # noqa: E402
from ingest.api.cost import cost_report  # noqa: E402
from ingest.api.overview import _align, choose_bucket  # noqa: E402
from ingest.api.tools import tool_stats  # noqa: E402
from ingest.api.traces import load_trace  # noqa: E402
from ingest.queries.failures import failure_clusters  # noqa: E402
from ingest.queries.filters import CommonFilters  # noqa: E402
from ingest.queries.overview import overview  # noqa: E402
from ingest.queries.tools import tool_rows  # noqa: E402
from ingest.store.database import cursor, open_database  # noqa: E402
from ingest.store.migrate import current_version, migrate  # noqa: E402
from tracer.pricing import default_table  # noqa: E402

TEMPLATE_RUNS = 100
SPREAD = timedelta(days=30)
TARGET_AGGREGATE_MS = 200.0
TARGET_TRACE_MS = 25.0


def build(path: Path, spans: int) -> None:
    conn = open_database(path)  # as the server writes it (row group size included)
    try:
        t0 = time.perf_counter()
        template_spans = load_templates(conn, TEMPLATE_RUNS)
        copies = max(1, round(spans / template_spans))
        replicate(conn, copies, SPREAD)
        total = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
        print(f"built {total:,} spans ({template_spans} template spans x {copies} copies) "
              f"in {time.perf_counter() - t0:.0f} s -> {path}", flush=True)  # fmt: skip
    finally:
        conn.close()


def upgrade(path: Path) -> None:
    """Bring a reused store to the current schema (e.g. build migration 8's rollup and trace index)."""
    conn = open_database(path)
    try:
        before = current_version(conn)
        after = migrate(conn)
        if after != before:
            conn.execute("CHECKPOINT")
            print(f"migrated {path} from schema {before} to {after}", flush=True)
    finally:
        conn.close()


def median_ms(fn: Callable[[int], Any], repeat: int) -> float:
    fn(-1)
    fn(-2)
    times = []
    for i in range(repeat):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def run(path: Path, repeat: int) -> int:
    # the server's DuckDB settings (threads, memory_limit), so the figures are what its API gets
    conn = open_database(path, read_only=True)
    cur = cursor(conn)
    total = cur.execute("SELECT count(*) FROM spans").fetchone()[0]
    runs = cur.execute("SELECT count(*) FROM runs").fetchone()[0]
    until = cur.execute("SELECT max(start_time) FROM runs").fetchone()[0]
    since = until - timedelta(days=7)
    filters = CommonFilters(since=since, until=until)
    bucket = choose_bucket(until - since)
    origin = _align(since, bucket)
    bucket_us = bucket // timedelta(microseconds=1)
    prices = default_table()
    trace_ids = [r[0] for r in cur.execute("SELECT trace_id FROM runs USING SAMPLE 64 ROWS (reservoir, 1)").fetchall()]
    sizes: list[int] = []

    def fetch_trace(i: int) -> None:
        run_row, spans = load_trace(cur, trace_ids[i % len(trace_ids)], None)
        assert run_row is not None and spans
        sizes.append(len(spans))

    cases: list[tuple[str, Callable[[int], Any], float]] = [
        ("overview (7 d)", lambda _: overview(cur, filters, origin, bucket_us), TARGET_AGGREGATE_MS),
        ("failure clusters (7 d)", lambda _: failure_clusters(cur, filters, origin, bucket_us, 50), TARGET_AGGREGATE_MS),
        ("tool stats (7 d)", lambda _: tool_stats(tool_rows(cur, filters), prices), TARGET_AGGREGATE_MS),
        ("cost by tool (7 d)", lambda _: cost_report(cur, filters, "tool", prices), TARGET_AGGREGATE_MS),
        ("cost by model (7 d)", lambda _: cost_report(cur, filters, "model", prices), TARGET_AGGREGATE_MS),
        ("tool stats (all 30 d)", lambda _: tool_stats(tool_rows(cur, CommonFilters()), prices), TARGET_AGGREGATE_MS),
        ("trace fetch", fetch_trace, TARGET_TRACE_MS),
    ]
    print(f"store: {total:,} spans, {runs:,} runs; median of {repeat} after 2 warm-ups", flush=True)
    failed = 0
    for name, fn, target in cases:
        ms = median_ms(fn, repeat)
        ok = ms <= target
        failed += not ok
        print(f"  {name:<24} {ms:8.1f} ms   target {target:.0f} ms   {'ok' if ok else 'OVER'}", flush=True)
    if sizes:
        print(f"  (trace fetch: traces of {min(sizes)}-{max(sizes)} spans)")
    conn.close()
    return 1 if failed else 0


def run_sql(path: Path, repeat: int) -> int:
    from bench._api_calls import running_server
    from bench._sql_queries import http_report
    from bench._sql_queries import report as sql_report

    conn = open_database(path, read_only=True)  # the server's DuckDB settings (threads, memory_limit)
    try:
        total = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
        until = conn.execute("SELECT max(start_time) FROM runs").fetchone()[0]
        print(f"store: {total:,} spans; SQL path, median and p95 of {repeat} after 2 warm-ups", flush=True)
        over = sql_report(conn, until, repeat)
    finally:
        conn.close()
    with running_server(path) as url:  # the server of a store without keys: every project, as operator
        over += http_report(url, until, repeat)
    return 1 if over else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--db", type=Path, help="reuse this store if it exists, else build it there")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the generated store (printed path)")
    parser.add_argument("--sql", action="store_true", help="time typical POST /api/sql aggregates instead")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="steplens-query-bench-") as tmp:
        path = args.db or Path(tmp) / "bench.duckdb"
        if not path.exists():
            build(path, args.spans)
        else:
            upgrade(path)
        if args.sql:
            code = run_sql(path, args.repeat)
        else:
            code = run(path, args.repeat)
            code = 1 if api_calls_report(path) else code
        if args.keep and args.db is None:
            kept = Path(tempfile.gettempdir()) / "steplens-query-bench.duckdb"
            path.replace(kept)
            print(f"kept {kept}")
    return code


if __name__ == "__main__":
    sys.exit(main())
