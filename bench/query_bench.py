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

then starts a real server on the store (waiting for its search index to catch up) and times 50
sequential `/healthz` and `/api/runs?limit=50` calls on one kept-alive connection, against a new
connection per call, with the ratio of `/api/runs` to the reference measured in the same run: the
page's rows read by one bare DuckDB Top-N on the server's store and encoded as JSON, no HTTP
(bench/_api_calls.py); then a few other small answers, kept-alive.

`--sql` times typical `POST /api/sql` aggregates instead (bench/_sql_queries.py: median and p95 of
`--repeat` runs of the real SQL path, target a median under 300 ms).

Targets: each aggregate under 200 ms, trace fetch under 25 ms, kept-alive small calls p50 under 10 ms. Results go to stdout; record them
in docs/benchmarks.md with the command and the scale.
"""

from __future__ import annotations

import argparse
import os
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
from ingest.queries.filters import CommonFilters  # noqa: E402
from ingest.store.backend import CLICKHOUSE_QUERIES, DUCKDB_QUERIES, QueryNamespace  # noqa: E402
from ingest.store.database import cursor, open_database  # noqa: E402
from ingest.store.migrate import current_version, migrate  # noqa: E402
from tracer.pricing import default_table  # noqa: E402

TEMPLATE_RUNS = 100
SPREAD = timedelta(days=30)
TARGET_AGGREGATE_MS = 200.0
TARGET_TRACE_MS = 25.0
# the sampled traces of the trace fetch: the same kind of sample in each store's SQL
DUCKDB_SAMPLE = "SELECT trace_id FROM runs USING SAMPLE 64 ROWS (reservoir, 1)"
CLICKHOUSE_SAMPLE = "SELECT trace_id FROM runs ORDER BY cityHash64(trace_id) LIMIT 64"


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


def cases_of(cur: Any, queries: QueryNamespace, sample: str) -> tuple[list[tuple[str, Callable[[int], Any], float]], list[int]]:
    """The timed cases on `cur`, through `queries` (the store's query namespace, as the API calls them)."""
    until = cur.execute("SELECT max(start_time) FROM runs").fetchone()[0]
    since = until - timedelta(days=7)
    filters = CommonFilters(since=since, until=until)
    bucket = choose_bucket(until - since)
    origin = _align(since, bucket)
    bucket_us = bucket // timedelta(microseconds=1)
    prices = default_table()
    trace_ids = [r[0] for r in cur.execute(sample).fetchall()]
    sizes: list[int] = []

    def fetch_trace(i: int) -> None:
        run_row, spans = load_trace(cur, trace_ids[i % len(trace_ids)], None, queries)
        assert run_row is not None and spans
        sizes.append(len(spans))

    q = queries
    cases: list[tuple[str, Callable[[int], Any], float]] = [
        ("overview (7 d)", lambda _: q.overview.overview(cur, filters, origin, bucket_us), TARGET_AGGREGATE_MS),
        ("failure clusters (7 d)", lambda _: q.failures.failure_clusters(cur, filters, origin, bucket_us, 50),
         TARGET_AGGREGATE_MS),
        ("tool stats (7 d)", lambda _: tool_stats(q.tools.tool_rows(cur, filters), prices), TARGET_AGGREGATE_MS),
        ("cost by tool (7 d)", lambda _: cost_report(cur, filters, "tool", prices, q), TARGET_AGGREGATE_MS),
        ("cost by model (7 d)", lambda _: cost_report(cur, filters, "model", prices, q), TARGET_AGGREGATE_MS),
        ("tool stats (all 30 d)", lambda _: tool_stats(q.tools.tool_rows(cur, CommonFilters()), prices),
         TARGET_AGGREGATE_MS),
        ("trace fetch", fetch_trace, TARGET_TRACE_MS),
    ]  # fmt: skip
    return cases, sizes


def time_cases(label: str, cur: Any, queries: QueryNamespace, sample: str, repeat: int) -> dict[str, float]:
    """Median ms of each case on one store; prints them as they come."""
    total = cur.execute("SELECT count(*) FROM spans").fetchone()[0]
    runs = cur.execute("SELECT count(*) FROM runs").fetchone()[0]
    print(f"{label}: {total:,} spans, {runs:,} runs; median of {repeat} after 2 warm-ups; {loadavg()}", flush=True)
    cases, sizes = cases_of(cur, queries, sample)
    out: dict[str, float] = {}
    for name, fn, target in cases:
        ms = median_ms(fn, repeat)
        out[name] = ms
        print(f"  {name:<24} {ms:8.1f} ms   target {target:.0f} ms   {'ok' if ms <= target else 'OVER'}", flush=True)
    if sizes:
        print(f"  (trace fetch: traces of {min(sizes)}-{max(sizes)} spans)")
    return out


def loadavg() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(path: Path, repeat: int) -> int:
    # the server's DuckDB settings (threads, memory_limit), so the figures are what its API gets
    conn = open_database(path, read_only=True)
    try:
        figures = time_cases("duckdb", cursor(conn), DUCKDB_QUERIES, DUCKDB_SAMPLE, repeat)
    finally:
        conn.close()
    return _over(figures)


def _over(figures: dict[str, float]) -> int:
    return int(any(ms > (TARGET_TRACE_MS if name == "trace fetch" else TARGET_AGGREGATE_MS)
                   for name, ms in figures.items()))  # fmt: skip


def run_clickhouse(directory: Path, repeat: int) -> dict[str, float]:
    """The same cases on the ClickHouse store in `directory` (chDB), through ClickHouse's query modules
    on the read cursor the API uses (`final = 1` on every statement)."""
    from ingest.store.clickhouse.cursor import ClickHouseCursor
    from ingest.store.clickhouse.transport import ChdbTransport

    transport = ChdbTransport(str(directory))
    try:
        return time_cases("clickhouse (chDB)", ClickHouseCursor(transport), CLICKHOUSE_QUERIES, CLICKHOUSE_SAMPLE, repeat)
    finally:
        transport.close()


def side_by_side(duck: dict[str, float], ch: dict[str, float]) -> None:
    print("side by side (median ms):", flush=True)
    print(f"  {'query':<24} {'duckdb':>9} {'clickhouse':>11} {'ch / duck':>10}")
    for name, d in duck.items():
        c = ch.get(name)
        if c is not None:
            print(f"  {name:<24} {d:9.1f} {c:11.1f} {c / d if d else 0:9.2f}x", flush=True)


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


def build_clickhouse(source: Path, target: Path) -> None:
    """The ClickHouse copy of the DuckDB store (bench/_ch_query_data.py), in its own process: one chDB
    session per process, and this one opens the directory afterwards."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    index = source.with_name(source.name + ".search")  # the DuckDB server's search documents, when built
    search = ["--search-index", str(index)] if index.exists() else []
    subprocess.run([sys.executable, "-m", "bench._ch_query_data", "--from", str(source), "--to", str(target), *search],
                   cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, check=True)  # fmt: skip


def run_both(path: Path, chdb: Path, repeat: int) -> int:
    """Each case on DuckDB then on ClickHouse, case by case (the load moves less between the two
    figures of one case than between two whole passes), then the side-by-side table."""
    from ingest.store.clickhouse.cursor import ClickHouseCursor
    from ingest.store.clickhouse.transport import ChdbTransport

    conn = open_database(path, read_only=True)
    transport = ChdbTransport(str(chdb))
    try:
        stores = [("duckdb", cursor(conn), DUCKDB_QUERIES, DUCKDB_SAMPLE),
                  ("clickhouse (chDB)", ClickHouseCursor(transport), CLICKHOUSE_QUERIES, CLICKHOUSE_SAMPLE)]
        for label, cur, _, _ in stores:
            total = cur.execute("SELECT count(*) FROM spans").fetchone()[0]
            runs = cur.execute("SELECT count(*) FROM runs").fetchone()[0]
            print(f"{label}: {total:,} spans, {runs:,} runs", flush=True)
        print(f"median of {repeat} after 2 warm-ups, each case on both stores in turn; {loadavg()}", flush=True)
        built = [cases_of(cur, queries, sample) for _, cur, queries, sample in stores]
        figures: list[dict[str, float]] = [{}, {}]
        for index, (name, _, target) in enumerate(built[0][0]):
            for side, (label, *_rest) in enumerate(stores):
                ms = median_ms(built[side][0][index][1], repeat)
                figures[side][name] = ms
                print(f"  {label:<18} {name:<24} {ms:8.1f} ms   target {target:.0f} ms   "
                      f"{'ok' if ms <= target else 'OVER'}", flush=True)  # fmt: skip
        for (label, *_rest), (_, sizes) in zip(stores, built, strict=True):
            if sizes:
                print(f"  ({label} trace fetch: traces of {min(sizes)}-{max(sizes)} spans)")
        side_by_side(figures[0], figures[1])
        print(f"  {loadavg()}", flush=True)
    finally:
        transport.close()
        conn.close()
    return max(_over(figures[0]), _over(figures[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--db", type=Path, help="reuse this store if it exists, else build it there")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the generated store (printed path)")
    parser.add_argument("--sql", action="store_true", help="time typical POST /api/sql aggregates instead")
    parser.add_argument("--store", choices=("duckdb", "clickhouse", "both"), default="duckdb",
                        help="the store(s) to time; clickhouse: a chDB copy of the DuckDB store (bench/_ch_query_data.py)")
    parser.add_argument("--chdb", type=Path, help="the ClickHouse copy's chDB directory (built when missing; "
                        "default: next to the DuckDB store, <db>.chdb)")
    parser.add_argument("--no-http", action="store_true", help="skip the calls over HTTP on a real server")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="steplens-query-bench-") as tmp:
        path = args.db or Path(tmp) / "bench.duckdb"
        chdb = args.chdb or path.with_name(path.name + ".chdb")
        if not path.exists():
            build(path, args.spans)
        elif args.store != "clickhouse" or not chdb.exists():  # a ClickHouse run alone reads no DuckDB file
            upgrade(path)
        if args.store != "duckdb" and not chdb.exists():
            t0 = time.perf_counter()
            build_clickhouse(path, chdb)
            print(f"built the ClickHouse copy {chdb} in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.sql:
            code = run_sql(path, args.repeat)
        elif args.store == "both":
            code = run_both(path, chdb, args.repeat)
        elif args.store == "clickhouse":
            code = _over(run_clickhouse(chdb, args.repeat))
        else:
            code = run(path, args.repeat)
        if not args.sql and not args.no_http:
            if args.store in ("duckdb", "both"):
                code = 1 if api_calls_report(path) else code
            if args.store in ("clickhouse", "both"):
                code = 1 if api_calls_report(Path(tmp) / "clickhouse-server.duckdb", chdb) else code
        if args.keep and args.db is None:
            kept = Path(tempfile.gettempdir()) / "steplens-query-bench.duckdb"
            path.replace(kept)
            print(f"kept {kept}")
    return code


if __name__ == "__main__":
    sys.exit(main())
