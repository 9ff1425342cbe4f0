"""The DuckDB side of the search index: spans loaded but not yet indexed (`search_pending`).

Why a table in DuckDB, filled inside the load transaction: a span that is stored is also queued for
indexing, atomically, so a crash between the DuckDB commit and the index's commit loses nothing (the
rows are still pending and indexing them again is a no-op in the index). SQL of ingest only.

Why the rows carry only the span's key: copying each span's content columns (its attributes JSON,
~600 bytes a span) into this table doubled the bytes every load transaction appends and writes to the
WAL: 5.3 of the load's 21.5 us/span of writer CPU (bench/_ingest_profile.py). The indexer reads the
content from `spans` by the key instead; the join on `start_time` lets DuckDB's join filter skip every
row group outside the pending spans' start times, so the read costs what the pending spans cost. Rows
queued with their content by an older version keep it and are read as they are; a span that retention
deleted before it was indexed yields no document (it would be pruned from the index anyway).
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from ingest.queries.filters import Where, project_clause

# Inside ingest/store/loading.py's transaction, with `new_spans` (the batch's inserted spans) in scope.
_QUEUE = """
INSERT INTO search_pending
SELECT project, trace_id, span_id, start_time, NULL, NULL, NULL, $now FROM new_spans
"""

# The pending spans of the oldest loads with their content, from `spans` (or as queued, for rows an
# older version queued with it).
_ROWS = """
SELECT p.project, p.trace_id, p.span_id, p.start_time,
    coalesce(p.status_message, s.status_message), coalesce(p.attributes, s.attributes), coalesce(p.events, s.events)
FROM search_pending p
LEFT JOIN spans s
    ON s.start_time = p.start_time AND s.trace_id = p.trace_id AND s.span_id = p.span_id AND s.project = p.project
WHERE p.queued_at <= ?
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
    return conn.execute(_ROWS, [upto]).fetchall()


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
