"""Retention: delete spans, runs (and their derived rows, log records, scores) older than a cutoff, a bounded
chunk per transaction.

Why chunks: the writer thread is also the loader; one giant DELETE over months of data would hold
it (and so every ingest ack's visibility) for a long time. Each chunk removes at most about
`chunk_rows` rows (the oldest first), and the writer loads pending batches between chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

DEFAULT_CHUNK_ROWS = 100_000
DERIVED_TABLES = ("tool_calls", "tool_carry", "run_models", "tool_rollup", "trace_index", "plan_spans")
# Tables aged out by another time column: OTLP log records by their own time, scores by when they were
# scored (a judgment given long after its run lives as long from then); annotation queue items with
# their run (by its start), queue decisions like the scores they wrote; online evaluators' outcomes by
# when they were evaluated.
TIMED_TABLES = (("log_records", "time"), ("scores", "created_at"), ("queue_items", "run_start"),
                ("queue_labels", "decided_at"), ("evaluations", "evaluated_at"))

# Table and column names are fixed here, never user input.
_BOUND = """
SELECT max({column}) FROM (
    SELECT {column} FROM {table} WHERE {column} < $cutoff ORDER BY {column} LIMIT $n
)
"""
_DELETE = "DELETE FROM {table} WHERE {column} <= $bound AND {column} < $cutoff"


@dataclass(frozen=True)
class ChunkResult:
    spans_deleted: int
    runs_deleted: int
    done: bool  # nothing older than the cutoff is left


def _delete_chunk(
    conn: duckdb.DuckDBPyConnection, table: str, cutoff: datetime, n: int, column: str = "start_time"
) -> tuple[int, bool]:
    bound = conn.execute(_BOUND.format(table=table, column=column), {"cutoff": cutoff, "n": n}).fetchall()[0][0]
    if bound is None:
        return 0, True
    sql = _DELETE.format(table=table, column=column)
    deleted = conn.execute(sql, {"bound": bound, "cutoff": cutoff}).fetchall()[0][0]
    return int(deleted), int(deleted) < n


def retention_chunk(
    conn: duckdb.DuckDBPyConnection, cutoff: datetime, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> ChunkResult:
    """Delete up to ~chunk_rows of the oldest spans and of the oldest runs before `cutoff`."""
    conn.execute("BEGIN TRANSACTION")
    try:
        spans, spans_done = _delete_chunk(conn, "spans", cutoff, chunk_rows)
        runs, runs_done = _delete_chunk(conn, "runs", cutoff, chunk_rows)
        # Analytics rows derived from those spans (ingest/store/analytics_load.py) age out with them.
        derived_done = all([_delete_chunk(conn, table, cutoff, chunk_rows)[1] for table in DERIVED_TABLES])
        timed_done = all([_delete_chunk(conn, t, cutoff, chunk_rows, column)[1] for t, column in TIMED_TABLES])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return ChunkResult(spans, runs, spans_done and runs_done and derived_done and timed_done)
