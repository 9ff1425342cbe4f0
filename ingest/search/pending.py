"""The DuckDB side of the search index: spans loaded but not yet indexed (`search_pending`).

Why a table in DuckDB, filled inside the load transaction: a span that is stored is also queued for
indexing, atomically, so a crash between the DuckDB commit and the index's commit loses nothing (the
rows are still pending and indexing them again is a no-op in the index). The rows carry the span's
content columns, so the indexer reads this small table, never the spans table. SQL of ingest only.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from ingest.queries.filters import Where, project_clause

# Inside ingest/store/loading.py's transaction, with `new_spans` (the batch's inserted spans) in scope.
_QUEUE = """
INSERT INTO search_pending
SELECT project, trace_id, span_id, start_time, status_message, attributes, events, $now FROM new_spans
"""

CONTENT_COLUMNS = "project, trace_id, span_id, start_time, status_message, attributes, events"


def queue(conn: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """Queue the load's new spans for the search index (inside the load transaction)."""
    conn.execute(_QUEUE, {"now": now})


def oldest_loads(conn: duckdb.DuckDBPyConnection, limit: int) -> list[tuple[datetime, int]]:
    """(queued_at, spans) of the oldest pending loads: each load's spans share one queued_at."""
    return conn.execute(
        "SELECT queued_at, count(*) FROM search_pending GROUP BY queued_at ORDER BY queued_at LIMIT ?", [limit]
    ).fetchall()


def rows_of(conn: duckdb.DuckDBPyConnection, upto: datetime) -> list[tuple]:
    return conn.execute(f"SELECT {CONTENT_COLUMNS} FROM search_pending WHERE queued_at <= ?", [upto]).fetchall()


def done(conn: duckdb.DuckDBPyConnection, upto: datetime) -> None:
    conn.execute("DELETE FROM search_pending WHERE queued_at <= ?", [upto])


def span_rows(conn: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime) -> list[tuple]:
    """Stored spans starting in [lo, hi): one chunk of a rebuild (zone maps skip the rest)."""
    return conn.execute(
        f"SELECT {CONTENT_COLUMNS} FROM spans WHERE start_time >= ? AND start_time < ?", [lo, hi]
    ).fetchall()


def span_extent(conn: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    lo, hi = conn.execute("SELECT min(start_time), max(start_time) FROM spans").fetchall()[0]
    return lo, hi


def has_pending(conn: duckdb.DuckDBPyConnection) -> bool:
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM search_pending)").fetchall()[0][0])


def lag(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None) -> tuple[int, datetime | None]:
    """(spans waiting, queued time of the oldest) among readable projects."""
    where = Where()
    project_clause(where, projects)
    count, oldest = cur.execute(
        f"SELECT count(*), min(queued_at) FROM search_pending WHERE {where.sql()}", where.params
    ).fetchall()[0]
    return int(count), oldest
