"""ClickHouse form of `ingest.queues.fill`: runs entering queues, live and by backfill.

The same filter and hash sample as DuckDB's, over the ClickHouse `runs` (latest version, FINAL).
What differs and why:
- a run row is settled when it is written (the writer derives the run, outcome included, before it
  inserts it), so there is no pending upkeep to stop short of;
- several ingest nodes insert runs concurrently, so a row updated at T may become visible just
  after a pass that already saw a row of T + 1: each live pass looks again at the last
  `OVERLAP` before the watermark, and the anti-join against the queue's items keeps a run that is
  seen twice from entering twice (`queue_items` is keyed by (project, queue, trace_id) too);
- the watermark is a row of `queue_watermarks`, the worker's own table (queue_table.move_watermark).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from ingest.queries.filters import Where
from ingest.queries.runs import RunFilters
from ingest.queues.fill import BACKFILL, LIVE, FillResult
from ingest.queues.model import QueueFilter
from ingest.queues.sampling import sampled
from ingest.queues.table import QueueRow
from ingest.store.clickhouse.queries.runs import runs_where
from ingest.store.clickhouse.schema_work import QUEUE_ITEMS
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision
from ingest.store.clickhouse.work.queue_table import move_watermark

__all__ = ["BACKFILL", "LIVE", "FillResult", "backfill", "fill_live", "filter_where"]

OVERLAP = timedelta(seconds=30)

_HAS_SCORE = ("trace_id IN (SELECT trace_id FROM scores WHERE project = ? AND trace_id IS NOT NULL "
              "AND span_id IS NULL AND name = ?)")
_LATEST_BELOW = ("trace_id IN (SELECT trace_id FROM scores WHERE project = ? AND trace_id IS NOT NULL "
                 "AND span_id IS NULL AND name = ? GROUP BY trace_id HAVING argMax(value_numeric, created_at) < ?)")


def filter_where(project: str, f: QueueFilter) -> Where:
    """The queue's filter over `runs`, restricted to its project and to runs with an outcome."""
    where = runs_where(RunFilters(
        projects=frozenset({project}), agent=f.agent, version=f.version, environment=f.environment,
        modes=frozenset(m.value for m in f.modes), ok=f.ok,
        stop_reason=None if f.stop_reason is None else f.stop_reason.value, min_cost=f.min_cost,
        min_steps=f.min_steps,
    ))
    where.add("ok IS NOT NULL")  # ended: a trace whose top span has not arrived has no outcome yet
    # the score conditions (ingest/queues/scoring.py): missing a score, or its latest value below one
    if f.score_missing is not None:
        where.add(f"NOT {_HAS_SCORE}", project, f.score_missing)
    if f.score_below is not None:
        where.add(_LATEST_BELOW, project, f.score_below.name, f.score_below.value)
    return where


def _insert(conn: WorkConnection, queue: QueueRow, rows: list[tuple[str, datetime]], source: str,
            now: datetime) -> int:
    spec = queue.spec
    chosen = {t: start for t, start in rows if sampled(queue.project, spec.name, t, spec.sampling_rate)}
    if not chosen:
        return 0
    conn.execute("SELECT trace_id FROM queue_items WHERE project = ? AND queue = ? AND has(?, trace_id)",
                 [queue.project, spec.name, sorted(chosen)])
    for (trace_id,) in conn.fetchall():
        chosen.pop(trace_id, None)
    if not chosen:
        return 0
    # the same runs offered again (a retry of this insert) are one insert: ClickHouse drops the copy
    digest = hashlib.sha256("\x1f".join([queue.project, spec.name, str(queue.created_at), *sorted(chosen)]).encode())
    revision = next_revision()
    conn.insert(QUEUE_ITEMS, [
        {"project": queue.project, "queue": spec.name, "trace_id": t, "run_start": start, "added_at": now,
         "source": source, "status": "pending", "decided_at": None, "revision": revision, "is_deleted": 0}
        for t, start in sorted(chosen.items())
    ], token=f"steplens:queue_items:{digest.hexdigest()}")
    return len(chosen)


def _runs(conn: WorkConnection, where: Where) -> list[tuple[str, datetime]]:
    conn.execute(f"SELECT trace_id, start_time FROM runs WHERE {where.sql()}", where.params)
    return [(t, s) for t, s in conn.fetchall()]


def fill_live(conn: WorkConnection, queue: QueueRow, now: datetime) -> FillResult:
    """Worker only: add the sampled matching runs updated after the watermark (looking again at the
    OVERLAP before it), then move the watermark to the last update seen."""
    conn.execute("SELECT max(updated_at), count() FROM runs WHERE project = ? AND updated_at > ?",
                 [queue.project, queue.watermark])
    top, n = conn.fetchone()  # type: ignore[misc]
    if not n:
        return FillResult(0, 0)
    where = filter_where(queue.project, queue.spec.filter)
    where.add("updated_at > ?", queue.watermark - OVERLAP)
    where.add("updated_at <= ?", top)
    rows = _runs(conn, where)
    added = _insert(conn, queue, rows, LIVE, now)
    move_watermark(conn, queue, top)
    return FillResult(len(rows), added)


def backfill(conn: WorkConnection, queue: QueueRow, since: datetime, until: datetime, now: datetime) -> FillResult:
    """Work thread: add the sampled matching runs that started in [since, until); runs already in the
    queue (from the live pass or an earlier backfill) are not added again."""
    where = filter_where(queue.project, queue.spec.filter)
    where.add("start_time >= ?", since)
    where.add("start_time < ?", until)
    rows = _runs(conn, where)
    return FillResult(len(rows), _insert(conn, queue, rows, BACKFILL, now))
