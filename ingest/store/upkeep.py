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

Why failing traces are isolated: one trace whose recomputation fails on its own (a value a DECIMAL
cast refuses, anything DuckDB rejects in that trace's rows) would otherwise fail every pass it is
picked into, forever, and with it every other project's analytics. A pass that fails on such an
error is split in halves until the failing traces are found (the others' halves commit); each
failing trace goes to `upkeep_quarantine` with its reason, is skipped by every later pass, and is
retried alone with exponential backoff (QUARANTINE_BACKOFF_S doubling up to QUARANTINE_MAX_S), so
it costs a few statements per hour, not a core. Environmental errors (ingest/store/failures.py) are
not the trace's fault: they fail the pass, which the writer retries later, and isolate nothing.

What that means for readers: traces, spans and runs are queryable as soon as their load commits;
`/api/tools`, `/api/cost` by model or tool and `/api/replanning` lag by at most the interval plus one
pass while the writer is busy, and not at all once it is idle. `SpanStore.wait_loaded` waits for both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import duckdb
import pyarrow as pa

from ingest.store import analytics_load, plan_load, run_derive
from ingest.store.analytics_load import ANALYTICS_OPERATIONS, TRACE_SPAN_COLUMNS
from ingest.store.failures import Failure, classify
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
SELECT p.project, p.trace_id, min(p.queued_at) AS queued_at FROM upkeep_pending p
ANTI JOIN upkeep_quarantine q ON q.project = p.project AND q.trace_id = p.trace_id
GROUP BY p.project, p.trace_id ORDER BY queued_at LIMIT $limit
"""

# A pass over given traces only (isolating a failure, retrying a quarantined trace).
_PICK_SUBSET = """
CREATE OR REPLACE TEMP TABLE picked AS
SELECT p.project, p.trace_id, min(p.queued_at) AS queued_at FROM upkeep_pending p
SEMI JOIN upkeep_subset s ON s.project = p.project AND s.trace_id = p.trace_id
GROUP BY p.project, p.trace_id
"""

# The traces a normal pass picks, in its order (to split a failed pass).
_CANDIDATES = """
SELECT p.project, p.trace_id FROM upkeep_pending p
ANTI JOIN upkeep_quarantine q ON q.project = p.project AND q.trace_id = p.trace_id
GROUP BY p.project, p.trace_id ORDER BY min(p.queued_at) LIMIT $limit
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

# Pending rows a pass can still take (quarantined traces wait for their retry, not for a pass).
_REMAINING = """
SELECT count(*) FROM upkeep_pending p
ANTI JOIN upkeep_quarantine q ON q.project = p.project AND q.trace_id = p.trace_id
"""

QUARANTINE_BACKOFF_S = 30.0
QUARANTINE_MAX_S = 3600.0

_QUARANTINE = """
INSERT INTO upkeep_quarantine SELECT $project, $trace_id, 1, $reason, $now, $next_at
WHERE NOT EXISTS (SELECT 1 FROM upkeep_quarantine WHERE project = $project AND trace_id = $trace_id)
"""
_QUARANTINE_AGAIN = """
UPDATE upkeep_quarantine SET attempts = attempts + 1, reason = $reason, next_at = $next_at
WHERE project = $project AND trace_id = $trace_id
RETURNING attempts
"""
# A set-aside trace's staged copy goes: its retries read the stored spans (what a fix changes).
_UNSTAGE = [
    "DELETE FROM upkeep_spans WHERE project = $project AND trace_id = $trace_id",
    "DELETE FROM upkeep_fresh WHERE project = $project AND trace_id = $trace_id",
]
_RELEASE = "DELETE FROM upkeep_quarantine WHERE project = $project AND trace_id = $trace_id"
_DUE = "SELECT project, trace_id, attempts FROM upkeep_quarantine WHERE next_at <= $now ORDER BY next_at LIMIT $limit"
_NEXT_DUE = "SELECT min(next_at), count(*) FROM upkeep_quarantine"
_QUARANTINE_ATTEMPTS = "SELECT attempts FROM upkeep_quarantine WHERE project = $project AND trace_id = $trace_id"

_CLEANUP = (
    "DROP TABLE IF EXISTS picked;DROP TABLE IF EXISTS touched;DROP TABLE IF EXISTS stale;"
    "DROP TABLE IF EXISTS trace_spans;DROP TABLE IF EXISTS upkeep_subset"
)

Trace = tuple[str, str]  # (project, trace_id)


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


def run_pass(conn: duckdb.DuckDBPyConnection, max_traces: int, traces: list[Trace] | None = None) -> UpkeepResult:
    """Recompute the analytics rows of up to `max_traces` pending traces (or of exactly `traces`), in
    one transaction. Quarantined traces are skipped unless given in `traces`."""
    conn.execute("BEGIN TRANSACTION")
    try:
        _ensure_staging(conn)
        if traces is None:
            conn.execute(_PICK, {"limit": max(1, max_traces)})
        else:
            subset = pa.table({"project": [t[0] for t in traces], "trace_id": [t[1] for t in traces]})
            conn.register("upkeep_subset_arrow", subset)
            try:
                conn.execute("CREATE OR REPLACE TEMP TABLE upkeep_subset AS SELECT * FROM upkeep_subset_arrow")
            finally:
                conn.unregister("upkeep_subset_arrow")
            conn.execute(_PICK_SUBSET)
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


@dataclass
class IsolatedPass:
    """A pass that may have set failing traces aside: what it did and which traces it isolated."""

    result: UpkeepResult
    isolated: list[tuple[Trace, BaseException]] = field(default_factory=list)
    passes: int = 1  # transactions it took (1 when nothing failed)


def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(QUARANTINE_MAX_S, QUARANTINE_BACKOFF_S * 2 ** max(0, attempts - 1)))


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


ISOLATED_FAILURES = frozenset({Failure.POISON})
# After repeated out-of-memory/transient failures of whole passes, what a pass isolates too: a trace
# whose recomputation alone exhausts the memory limit is the trace's own problem, not everyone's.
ISOLATED_AFTER_REPEATED_FAILURES = frozenset({Failure.POISON, Failure.TRANSIENT})


def run_isolated(
    conn: duckdb.DuckDBPyConnection, max_traces: int, now: datetime,
    isolate: frozenset[Failure] = ISOLATED_FAILURES,
) -> IsolatedPass:
    """`run_pass`, and when it fails on a trace's own data (a failure of a class in `isolate`): split the
    picked traces in halves until the failing ones are alone, commit the rest, quarantine those.
    Other errors propagate."""
    try:
        return IsolatedPass(run_pass(conn, max_traces))
    except duckdb.Error as exc:
        if classify(exc) not in isolate:
            raise
        first_error = exc
    candidates = [(str(p), str(t)) for p, t in conn.execute(_CANDIDATES, {"limit": max(1, max_traces)}).fetchall()]
    out = IsolatedPass(UpkeepResult(0, 0, 0), passes=1)
    done = stale = 0

    def split(group: list[Trace]) -> None:
        nonlocal done, stale
        out.passes += 1
        try:
            r = run_pass(conn, len(group), group)
        except duckdb.Error as exc:
            if classify(exc) not in isolate:
                raise
            if len(group) == 1:
                out.isolated.append((group[0], exc))
                return
            half = len(group) // 2
            split(group[:half])
            split(group[half:])
            return
        done += r.traces
        stale += r.stale

    if candidates:
        split(candidates)
    if out.isolated:
        _ensure_staging(conn)
    for (project, trace_id), exc in out.isolated:
        conn.execute(
            _QUARANTINE,
            {"project": project, "trace_id": trace_id, "reason": _reason(exc), "now": now, "next_at": now + _backoff(1)},
        )
        for statement in _UNSTAGE:
            conn.execute(statement, {"project": project, "trace_id": trace_id})
    if not out.isolated:  # it failed as a whole but no trace alone: report the original error's way
        log.warning("upkeep pass failed (%s) but every trace passed alone", first_error)
    out.result = UpkeepResult(traces=done, stale=stale, remaining=pending(conn))
    return out


def retry_quarantined(conn: duckdb.DuckDBPyConnection, now: datetime, limit: int = 10) -> list[tuple[Trace, int, str | None]]:
    """Retry the quarantined traces that are due, each alone: (trace, attempts so far, None when it
    passed and left quarantine, else the new reason)."""
    out: list[tuple[Trace, int, str | None]] = []
    for project, trace_id, attempts in conn.execute(_DUE, {"now": now, "limit": limit}).fetchall():
        trace = (str(project), str(trace_id))
        key = {"project": trace[0], "trace_id": trace[1]}
        try:
            run_pass(conn, 1, [trace])
        except duckdb.Error as exc:
            if classify(exc) is not Failure.POISON:
                raise
            reason = _reason(exc)
            n = conn.execute(_QUARANTINE_AGAIN, {**key, "reason": reason, "next_at": now + _backoff(attempts + 1)})
            out.append((trace, int(n.fetchall()[0][0]), reason))
            continue
        conn.execute(_RELEASE, key)
        out.append((trace, int(attempts), None))
    return out


def quarantine_state(conn: duckdb.DuckDBPyConnection) -> tuple[datetime | None, int]:
    """(when the next quarantined trace is due, how many are quarantined)."""
    next_at, count = conn.execute(_NEXT_DUE).fetchall()[0]
    return next_at, int(count)


def quarantine_attempts(conn: duckdb.DuckDBPyConnection, project: str, trace_id: str) -> int | None:
    rows = conn.execute(_QUARANTINE_ATTEMPTS, {"project": project, "trace_id": trace_id}).fetchall()
    return int(rows[0][0]) if rows else None
