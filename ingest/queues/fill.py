"""Runs entering queues: the live pass (runs updated since the queue's watermark) and backfill.

Why the live pass reads `runs.updated_at` and not the run's end time: a run's row is rewritten (and
its `updated_at` moved) by every load that brings more of its spans, so a run whose outcome arrives
late, or whose spans arrive out of order, is looked at again once it has one; its end time may lie
long before the watermark. Why the pass stops short of traces still waiting for analytics upkeep:
for foreign clients upkeep derives the outcome (ok, stop reason) after the load, without moving
`updated_at`; a run is only judged once it is settled, and the watermark never passes an unsettled one.

Both paths select with the same filter and the same hash sample (sampling.py), and insert only runs
not already in the queue, on the writer thread: a run enters a queue at most once, however often it
is looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import pyarrow as pa

from ingest.queries.filters import Where
from ingest.queries.runs import RunFilters, runs_where
from ingest.queues.model import QueueFilter
from ingest.queues.sampling import sampled
from ingest.queues.scoring import score_clauses
from ingest.queues.table import QueueRow

LIVE, BACKFILL = "live", "backfill"

# The earliest load whose upkeep has not run yet, per project (quarantined traces wait for their
# retry and do not hold queues back; their rows are as settled as they will get).
_UNSETTLED = """
SELECT min(p.queued_at) FROM upkeep_pending p
ANTI JOIN upkeep_quarantine q ON q.project = p.project AND q.trace_id = p.trace_id
WHERE p.project = ?
"""

_INSERT = """
INSERT INTO queue_items (project, queue, trace_id, run_start, added_at, source, status)
SELECT n.project, n.queue, n.trace_id, n.run_start, $now, $source, 'pending' FROM new_items n
ANTI JOIN queue_items i ON i.project = n.project AND i.queue = n.queue AND i.trace_id = n.trace_id
"""


@dataclass(frozen=True)
class FillResult:
    examined: int  # runs matching the filter that were looked at
    added: int  # of those, how many entered (sampled and not already in)


def filter_where(project: str, f: QueueFilter) -> Where:
    """The queue's filter over the runs table, restricted to its project and to runs with an outcome."""
    where = runs_where(RunFilters(
        projects=frozenset({project}), agent=f.agent, version=f.version, environment=f.environment,
        modes=frozenset(m.value for m in f.modes), ok=f.ok,
        stop_reason=None if f.stop_reason is None else f.stop_reason.value, min_cost=f.min_cost,
        min_steps=f.min_steps,
    ))
    where.add("ok IS NOT NULL")  # ended: a trace whose top span has not arrived has no outcome yet
    score_clauses(where, f)
    return where


def _insert(conn: duckdb.DuckDBPyConnection, queue: QueueRow, rows: list[tuple[str, datetime]], source: str,
            now: datetime) -> int:
    spec = queue.spec
    chosen = [(t, start) for t, start in rows if sampled(queue.project, spec.name, t, spec.sampling_rate)]
    if not chosen:
        return 0
    table = pa.table({
        "project": [queue.project] * len(chosen), "queue": [spec.name] * len(chosen),
        "trace_id": [t for t, _ in chosen], "run_start": pa.array([s for _, s in chosen], pa.timestamp("us")),
    })
    conn.register("new_items", table)
    try:
        inserted = conn.execute(_INSERT, {"now": now, "source": source}).fetchall()  # [(rows inserted,)]
    finally:
        conn.unregister("new_items")
    return int(inserted[0][0]) if inserted else 0


def fill_live(conn: duckdb.DuckDBPyConnection, queue: QueueRow, now: datetime) -> FillResult:
    """Writer thread only, one transaction: add the sampled matching runs updated after the
    watermark (and settled), then move the watermark to the last settled update seen."""
    unsettled = conn.execute(_UNSETTLED, [queue.project]).fetchone()[0]  # type: ignore[index]
    bound = Where()
    bound.add("project = ?", queue.project)
    bound.add("updated_at > ?", queue.watermark)
    if unsettled is not None:
        bound.add("updated_at < ?", unsettled)
    conn.execute("BEGIN TRANSACTION")
    try:
        top = conn.execute(f"SELECT max(updated_at) FROM runs WHERE {bound.sql()}", bound.params).fetchone()[0]  # type: ignore[index]
        if top is None:
            conn.execute("COMMIT")
            return FillResult(0, 0)
        where = filter_where(queue.project, queue.spec.filter)
        where.add("updated_at > ?", queue.watermark)
        where.add("updated_at <= ?", top)
        rows = conn.execute(f"SELECT trace_id, start_time FROM runs WHERE {where.sql()}", where.params).fetchall()
        added = _insert(conn, queue, rows, LIVE, now)
        conn.execute("UPDATE annotation_queues SET watermark = ? WHERE project = ? AND name = ?",
                     [top, queue.project, queue.name])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return FillResult(len(rows), added)


def backfill(conn: duckdb.DuckDBPyConnection, queue: QueueRow, since: datetime, until: datetime,
             now: datetime) -> FillResult:
    """Writer thread only: add the sampled matching runs that started in [since, until). Runs already
    in the queue (from the live pass or an earlier backfill) are not added again."""
    where = filter_where(queue.project, queue.spec.filter)
    where.add("start_time >= ?", since)
    where.add("start_time < ?", until)
    conn.execute("BEGIN TRANSACTION")
    try:
        rows = conn.execute(f"SELECT trace_id, start_time FROM runs WHERE {where.sql()}", where.params).fetchall()
        added = _insert(conn, queue, rows, BACKFILL, now)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return FillResult(len(rows), added)
