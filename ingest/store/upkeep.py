"""The analytics upkeep pass: brings the derived tables of recently loaded traces up to date.

Why out of the load transaction: recomputing a trace's tool costs, model usage and replanning rows
takes ~15 SQL statements, each with a fixed cost of ~5-20 ms on this class of machine whatever its
size. Paid in every load transaction they were a third of the writer's time and held back the
visibility of every span queued behind the load. The load now only records which traces it touched
(`upkeep_pending`, in its own transaction, so nothing is forgotten across a crash); the writer runs
this pass when it has nothing to load, or at least every `upkeep_interval_s` under sustained load,
and a trace touched by many loads in between is recomputed once.

Why loads also stage spans: recomputing a trace needs all its tool/LLM/truncate/step/plan spans, and
reading them back from `spans` means scanning every span in the traces' time window (there is no
index by trace; at 25k spans/s a minute-long window is 1.5M rows). So each load copies the few
columns the analytics need of those spans into a connection-local temporary table, `upkeep_spans`,
and marks the traces it saw first (`upkeep_fresh`). For a fresh trace the staged spans are the whole
trace, and the pass reads nothing else; only traces that had spans before (`stale`: a long run
exporting in pieces, or anything after a restart, when the temporary tables start empty) are read
back from `spans`, bounded by their own extent. The temporary tables hold no acknowledged data:
losing them in a crash only sends the pass down the slower, equally correct path.

What that means for readers: traces, spans and runs are queryable as soon as their load commits;
`/api/tools`, `/api/cost` by model or tool and `/api/replanning` lag by at most the interval plus one
pass while the writer is busy, and not at all once it is idle. `SpanStore.wait_loaded` waits for both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.store import analytics_load, plan_load, run_derive
from ingest.store.analytics_load import ANALYTICS_OPERATIONS, TRACE_SPAN_COLUMNS
from ingest.store.run_sql import SOURCE_REPORTED

log = logging.getLogger(__name__)

# Connection-local (TEMP) staging, created on first use by a load or a pass on that connection.
_STAGING_DDL = [
    f"CREATE TEMP TABLE IF NOT EXISTS upkeep_spans AS SELECT {TRACE_SPAN_COLUMNS} FROM spans s WHERE false",
    "CREATE TEMP TABLE IF NOT EXISTS upkeep_fresh (project VARCHAR, trace_id VARCHAR)",
]

# In the load transaction, after the spans are inserted and merged_runs/old_runs built: the batch's
# analytics spans staged, its new traces marked fresh, every trace it touched queued.
_QUEUE = [
    f"INSERT INTO upkeep_spans SELECT {TRACE_SPAN_COLUMNS} FROM new_spans s WHERE {ANALYTICS_OPERATIONS}",
    """
    INSERT INTO upkeep_fresh SELECT m.project, m.trace_id
    FROM merged_runs m ANTI JOIN old_runs o ON o.project = m.project AND o.trace_id = m.trace_id
    """,
    "INSERT INTO upkeep_pending SELECT project, trace_id, $now FROM merged_runs",
]

_PICK = """
CREATE OR REPLACE TEMP TABLE picked AS
SELECT project, trace_id, min(queued_at) AS queued_at FROM upkeep_pending
GROUP BY project, trace_id ORDER BY queued_at LIMIT $limit
"""

# The picked traces with their run facts. Every pending trace's runs row was rewritten by the load
# that queued it (updated_at = queued_at), so the updated_at bound lets zone maps skip the runs that
# no recent load touched.
_TOUCHED = """
CREATE OR REPLACE TEMP TABLE touched AS
SELECT r.project, r.trace_id, r.span_start, r.span_end, r.start_time AS run_start, r.agent, r.version,
    r.environment, r.mode, f.trace_id IS NOT NULL AS fresh, coalesce(r.stop_reason_source = $reported, false) AS reported
FROM runs r SEMI JOIN picked p ON r.project = p.project AND r.trace_id = p.trace_id
LEFT JOIN (SELECT DISTINCT project, trace_id FROM upkeep_fresh) f ON f.project = r.project AND f.trace_id = r.trace_id
WHERE r.updated_at >= (SELECT min(queued_at) FROM picked)
"""

# Stale traces, and the pass's size: (touched, stale, stale window start, stale window end, traces
# whose run outcome is derived from their spans: ingest/store/run_derive.py).
_STALE = """
CREATE OR REPLACE TEMP TABLE stale AS SELECT * FROM touched WHERE NOT fresh;
SELECT (SELECT count(*) FROM touched), count(*), min(span_start), max(span_end),
    (SELECT count(*) FROM touched WHERE NOT reported) FROM stale
"""

# Picked traces without a runs row (retention removed the run meanwhile) are dropped with the rest.
_DONE = (
    "DELETE FROM upkeep_pending USING picked p "
    "WHERE upkeep_pending.project = p.project AND upkeep_pending.trace_id = p.trace_id"
)
_DONE_STAGING = [
    "DELETE FROM upkeep_spans USING picked p WHERE upkeep_spans.project = p.project AND upkeep_spans.trace_id = p.trace_id",
    "DELETE FROM upkeep_fresh USING picked p WHERE upkeep_fresh.project = p.project AND upkeep_fresh.trace_id = p.trace_id",
]
# Nothing pending any more: whatever is staged belonged to this pass; dropping the temporary tables
# (rather than deleting their rows) hands their memory back.
_DROP_STAGING = "DROP TABLE IF EXISTS upkeep_spans;DROP TABLE IF EXISTS upkeep_fresh"

_REMAINING = "SELECT count(*) FROM upkeep_pending"

_CLEANUP = "DROP TABLE IF EXISTS picked;DROP TABLE IF EXISTS touched;DROP TABLE IF EXISTS stale;DROP TABLE IF EXISTS trace_spans"


@dataclass(frozen=True)
class UpkeepResult:
    traces: int  # traces recomputed
    stale: int  # of which read back from `spans` (not staged from their first span)
    remaining: int  # pending rows left for the next pass (more than `max_traces` were waiting)


def pending(conn: duckdb.DuckDBPyConnection) -> int:
    return int(conn.execute(_REMAINING).fetchall()[0][0])


def _ensure_staging(conn: duckdb.DuckDBPyConnection) -> None:
    for statement in _STAGING_DDL:
        analytics_load.execute(conn, statement)


def queue(conn: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """Stage and queue the load's touched traces (inside the load transaction)."""
    _ensure_staging(conn)
    for statement in _QUEUE:
        analytics_load.execute(conn, statement, {"now": now})


def run_pass(conn: duckdb.DuckDBPyConnection, max_traces: int) -> UpkeepResult:
    """Recompute the analytics rows of up to `max_traces` pending traces, in one transaction."""
    conn.execute("BEGIN TRANSACTION")
    try:
        _ensure_staging(conn)
        conn.execute(_PICK, {"limit": max(1, max_traces)})
        conn.execute(_TOUCHED, {"reported": SOURCE_REPORTED})
        traces, stale, lo, hi, derive = conn.execute(_STALE).fetchall()[0]
        if traces:
            stale_window: dict[str, Any] | None = {"lo": lo, "hi": hi} if stale else None
            analytics_load.execute(conn, analytics_load.TRACE_SPANS)
            if stale_window is not None:
                analytics_load.execute(conn, analytics_load.STORED_TRACE_SPANS, stale_window)
            if derive:
                run_derive.maintain(conn)
            tools, llm, plans = analytics_load.execute(conn, analytics_load.TRACE_SPAN_COUNTS).fetchall()[0]
            analytics_load.maintain(conn, stale_window, tool_spans=tools, llm_spans=llm)
            plan_load.maintain(conn, stale_window, plan_spans=plans)
        conn.execute(_DONE)
        remaining = pending(conn)
        if remaining:
            for statement in _DONE_STAGING:
                conn.execute(statement)
        else:
            conn.execute(_DROP_STAGING)
        conn.execute(_CLEANUP)
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except duckdb.Error as exc:  # keep the original error; the connection may be gone
            log.error("upkeep rollback failed: %s", exc)
        raise
    return UpkeepResult(traces=int(traces), stale=int(stale), remaining=remaining)
