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

# The oldest pending spans, at most $limit: a chunk the indexer can index within its step's budget (one
# load can hold 50,000 spans, far more than fit). Held in a connection-local table until `done_taken`
# deletes exactly these rows, whichever loads they came from.
_TAKE = """
CREATE OR REPLACE TEMP TABLE search_taken AS
SELECT * FROM search_pending ORDER BY queued_at LIMIT $limit
"""

# The taken spans with their content, from `spans` (or as queued, for rows an older version queued with it).
_TAKEN_ROWS = """
SELECT p.project, p.trace_id, p.span_id, p.start_time,
    coalesce(p.status_message, s.status_message), coalesce(p.attributes, s.attributes), coalesce(p.events, s.events)
FROM search_taken p
LEFT JOIN spans s
    ON s.start_time = p.start_time AND s.trace_id = p.trace_id AND s.span_id = p.span_id AND s.project = p.project
"""

_DONE_TAKEN = [
    """DELETE FROM search_pending USING search_taken t
    WHERE search_pending.project = t.project AND search_pending.trace_id = t.trace_id
        AND search_pending.span_id = t.span_id AND search_pending.start_time = t.start_time""",
    "DROP TABLE IF EXISTS search_taken",
]

CONTENT_COLUMNS = "project, trace_id, span_id, start_time, status_message, attributes, events"


def queue(conn: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """Queue the load's new spans for the search index (inside the load transaction)."""
    conn.execute(_QUEUE, {"now": now})


def take(conn: duckdb.DuckDBPyConnection, limit: int) -> list[tuple]:
    """The oldest pending spans (at most `limit`) with their content columns, as CONTENT_COLUMNS rows;
    they stay pending until `done_taken`."""
    conn.execute(_TAKE, {"limit": limit})
    return conn.execute(_TAKEN_ROWS).fetchall()


def done_taken(conn: duckdb.DuckDBPyConnection) -> None:
    """The spans of the last `take` are in the index: no longer pending."""
    for statement in _DONE_TAKEN:
        conn.execute(statement)


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
