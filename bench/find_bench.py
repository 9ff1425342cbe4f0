"""Finding things at 10M spans (issue 14's benchmark): attribute filters and full-text search.

    .venv/bin/python -m bench.find_bench [--spans 10000000] [--db PATH] [--repeat 15]

Builds (or reuses, with --db, migrated to the current schema first) the store bench/query_bench.py
builds (template runs through the real pipeline, replicated in SQL over 30 days; bench/_query_data.py),
then builds its full-text index with the server's own indexer (`SearchIndexer` rebuild, as
`steplens search reindex` does; the time is printed) in a sidecar next to the store, reused when it is
already built. Then times, as the API runs them (the functions of ingest/queries and ingest/search on
one cursor with the server's DuckDB settings), median and p95 of `--repeat` runs after two warm-ups:

  attribute filter   /api/spans  attributes["gen_ai.tool.name"] = "refund", last 24 h and 7 d; a value
                                 no span has (7 d: every span of the range is read), on the promoted
                                 key and on a key no column holds (the raw-text pre-filter)
                     /api/runs   attributes["gen_ai.tool.name"] = "refund" and status = "ERROR", 24 h
  full-text search   /api/search "timed out" and "refund" (a word of every run) over all 30 d, top 20
                     /api/runs   search("timed out") and agent = "billing", 7 d
  typical SQL aggregate  measured by POST /api/sql's benchmark (bench/sql_bench.py), not here

each next to a reference measured in the same run, with the ratio: the same query on the promoted
`tool_name` column (what the attribute term costs beyond it), the exact JSON test without its
pre-filter (what the pre-filter saves on a key no column holds), and a substring scan of the content columns
(ILIKE over status_message and attributes, what the index saves). Target: < 300 ms median.
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

from bench.query_bench import build, upgrade  # noqa: E402
from ingest.filters.compile import run_predicate, span_predicate  # noqa: E402
from ingest.filters.parse import parse_filter  # noqa: E402
from ingest.queries.filters import CommonFilters  # noqa: E402
from ingest.queries.runs import RunFilters, list_runs  # noqa: E402
from ingest.queries.search import span_facts  # noqa: E402
from ingest.queries.spans import list_spans  # noqa: E402
from ingest.search.hits import HitTables  # noqa: E402
from ingest.search.index import SearchIndex  # noqa: E402
from ingest.search.indexer import META_BUILT_AT, SearchIndexer  # noqa: E402
from ingest.store.database import cursor, open_database  # noqa: E402
from tracer import conventions  # noqa: E402

TARGET_MS = 300.0
ATTRIBUTE = 'attributes["gen_ai.tool.name"] = "refund"'
PROMOTED = 'tool_name = "refund"'
# The worst case of a top-50 page: nothing matches, so every span of the range is read.
NO_MATCH = 'attributes["gen_ai.tool.name"] = "no_such_tool"'
NO_MATCH_PROMOTED = 'tool_name = "no_such_tool"'
# The same on a key no column holds: the raw-text pre-filter (ingest/filters/prefilter.py), whose
# reference is the exact JSON test alone.
NO_MATCH_RAW = f'attributes["{conventions.LLM_ATTEMPT}"] = "no_such_value"'


def build_index(db: Path, index_path: Path) -> None:
    """The store's search index, by the server's indexer (reused when a previous run finished it)."""
    index = SearchIndex(index_path)
    if index_path.is_file():  # an index made before the document counter gets it here, once
        index.writer()
        index.close()
    if META_BUILT_AT in index.meta() and (index.documents() or 0) > 0:
        print(f"reusing search index {index_path} ({index.documents():,} documents)", flush=True)
        return
    conn = open_database(db)
    try:
        indexer = SearchIndexer(index)
        t0 = time.perf_counter()
        indexer.start_rebuild(conn)
        added = 0
        while indexer.work:
            added += indexer.step(conn)
            if indexer.failed:
                raise RuntimeError(indexer.failed)
        seconds = time.perf_counter() - t0
        spans = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
        size = sum(p.stat().st_size for p in index_path.parent.glob(index_path.name + "*")) / 2**20
        print(f"indexed {spans:,} spans into {added:,} documents in {seconds:.0f} s ({spans / seconds:,.0f} spans/s), "
              f"{size:,.0f} MiB -> {index_path}", flush=True)
    finally:
        index.close()
        conn.close()


def timings(fn: Callable[[int], Any], repeat: int) -> tuple[float, float]:
    """(median, p95) in ms of `repeat` calls after two warm-ups."""
    fn(-1)
    fn(-2)
    times = []
    for i in range(repeat):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def sql_aggregate_case(conn: Any, until: Any) -> tuple[str, Callable[[int], Any]]:
    """The issue's "typical SQL aggregate": LLM calls per model over 7 days through POST /api/sql's
    own path (parse, check, project-bound views), from bench/_sql_queries.py."""
    from bench._sql_queries import typical_aggregate

    return typical_aggregate(conn, until)


def run(db: Path, index_path: Path, repeat: int) -> int:
    conn = open_database(db, read_only=True)  # the server's DuckDB settings
    cur = cursor(conn)
    index = SearchIndex(index_path)
    total = cur.execute("SELECT count(*) FROM spans").fetchone()[0]
    until = cur.execute("SELECT max(start_time) FROM spans").fetchone()[0] + timedelta(microseconds=1)
    day, week = until - timedelta(days=1), until - timedelta(days=7)

    def spans(expression: str, since: Any, prefilter: bool = True) -> Callable[[int], Any]:
        node = parse_filter(expression)

        def fn(_: int) -> None:
            hits = HitTables(cur, index, None, since, until)
            try:
                list_spans(cur, None, since, until, span_predicate(node, expression, "s", hits, prefilter), 50)
            finally:
                hits.close()
        return fn

    def runs(expression: str, since: Any) -> Callable[[int], Any]:
        node = parse_filter(expression)
        filters = RunFilters(since=since, until=until, modes=CommonFilters().modes)
        span_since = since - timedelta(hours=1)

        def fn(_: int) -> None:
            hits = HitTables(cur, index, None, span_since, None)
            try:
                list_runs(cur, filters, limit=50, extra=run_predicate(node, expression, hits, span_since))
            finally:
                hits.close()
        return fn

    def search(q: str) -> Callable[[int], Any]:
        def fn(_: int) -> None:
            hits = index.search(q, None, None, None, limit=100)
            span_facts(cur, hits[:20], None)
        return fn

    def like_scan(word: str) -> Callable[[int], Any]:
        pattern = f"%{word}%"

        def fn(_: int) -> None:
            cur.execute(
                "SELECT project, trace_id, span_id FROM spans WHERE status_message ILIKE ? OR attributes::VARCHAR ILIKE ? "
                "ORDER BY start_time DESC LIMIT 20", [pattern, pattern],
            ).fetchall()
        return fn

    # (name, fn, reference name, reference fn)
    cases = [
        ("spans attr filter (24 h)", spans(ATTRIBUTE, day), "promoted column", spans(PROMOTED, day)),
        ("spans attr filter (7 d)", spans(ATTRIBUTE, week), "promoted column", spans(PROMOTED, week)),
        ("spans attr, no match (7 d)", spans(NO_MATCH, week), "promoted column", spans(NO_MATCH_PROMOTED, week)),
        ("spans raw attr, no match (7 d)", spans(NO_MATCH_RAW, week), "exact JSON test",
         spans(NO_MATCH_RAW, week, prefilter=False)),
        ("runs attr filter (24 h)", runs(f'{ATTRIBUTE} and status = "ERROR"', day), "promoted column",
         runs(f'{PROMOTED} and status = "ERROR"', day)),
        ('search "timed out" (30 d)', search("timed out"), "ILIKE scan", like_scan("timed out")),
        ('search "refund" (30 d)', search("refund"), "ILIKE scan", like_scan("refund")),
        ('runs search() filter (7 d)', runs('search("timed out") and agent = "billing"', week), "ILIKE filter",
         runs('status_message contains "timed out" and agent = "billing"', week)),
    ]  # fmt: skip
    print(f"store: {total:,} spans, index: {index.documents():,} documents; median / p95 of {repeat} after 2 warm-ups",
          flush=True)
    failed = 0
    for name, fn, ref_name, ref in cases:
        med, p95 = timings(fn, repeat)
        ref_med, ref_p95 = timings(ref, max(3, repeat // 3))
        ok = med <= TARGET_MS
        failed += not ok
        print(f"  {name:<28} {med:8.1f} / {p95:8.1f} ms   {ref_name} {ref_med:8.1f} / {ref_p95:8.1f} ms   "
              f"ratio {med / ref_med:5.2f}   target {TARGET_MS:.0f} ms {'ok' if ok else 'OVER'}", flush=True)
    sql = sql_aggregate_case(conn, until)
    med, p95 = timings(sql[1], repeat)
    print(f"  {sql[0]:<28} {med:8.1f} / {p95:8.1f} ms   target {TARGET_MS:.0f} ms")
    conn.close()
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--db", type=Path, help="reuse this store (and its <db>.search index) if it exists")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="steplens-find-bench-") as tmp:
        path = args.db or Path(tmp) / "bench.duckdb"
        if not path.exists():
            build(path, args.spans)
        else:
            upgrade(path)
        index_path = path.with_name(path.name + ".search")
        build_index(path, index_path)
        return run(path, index_path, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
