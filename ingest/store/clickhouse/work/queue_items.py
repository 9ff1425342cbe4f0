"""ClickHouse form of `ingest.queues.items`: the items of a queue, who holds one, who decided what.

The rules are DuckDB's (see that module): an item needs `labels_per_item` decisions, a person holds
at most one item of a queue at a time, never one they decided or that enough others hold or
decided. Why they hold without transactions: every function here that writes runs on the one work
thread of the node that owns the queue's claims and decisions (the api node; design.md §3), so its
reads and inserts see no other claim in between. A claim that runs out is not deleted: reads look
only at claims whose lease has not ended. A status change is a new item version; a withdrawn claim
a tombstone. The read helpers `get_item` and the holders/deciders lookup are DuckDB's module's
own: plain SELECTs over these tables, which the ClickHouse cursor reads FINAL.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from ingest.queues.items import (
    DONE,
    IN_PROGRESS,
    LABELLED,
    PENDING,
    SKIPPED,
    STATUSES,
    Decision,
    Item,
    NotInQueue,
    NotYours,
    _attach,
    _holders_and_deciders,
    get_item,
)
from ingest.queues.table import QueueRow
from ingest.store.clickhouse.schema_work import QUEUE_CLAIMS, QUEUE_ITEMS, QUEUE_LABELS
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision

__all__ = ["DONE", "IN_PROGRESS", "LABELLED", "PENDING", "SKIPPED", "STATUSES", "Decision", "Item", "NotInQueue",
           "NotYours", "check_may_decide", "decide", "get_item", "list_items", "progress", "take_next"]

_ITEM_COLUMNS = "project, queue, trace_id, run_start, added_at, source, status, decided_at"
_LIVE_CLAIMS = "SELECT trace_id FROM queue_claims WHERE project = ? AND queue = ? AND lease_until > ?"


def list_items(cur: Any, queue: QueueRow, now: datetime, status: str | None = None,
               limit: int = 100, after: tuple[datetime, str] | None = None) -> list[Item]:
    """Items in the order they entered (then by trace id), after the keyset `after` if given."""
    clauses, params = ["project = ?", "queue = ?"], [queue.project, queue.name]
    if status in (PENDING, IN_PROGRESS):
        clauses.append("status = 'pending'")
        clauses.append(f"trace_id {'IN' if status == IN_PROGRESS else 'NOT IN'} ({_LIVE_CLAIMS})")
        params += [queue.project, queue.name, now]
    elif status is not None:
        clauses.append("status = ?")
        params.append(status)
    if after is not None:
        clauses.append("(added_at > ? OR (added_at = ? AND trace_id > ?))")
        params += [after[0], after[0], after[1]]
    cur.execute(f"SELECT {_ITEM_COLUMNS} FROM queue_items WHERE {' AND '.join(clauses)} "
                "ORDER BY added_at, trace_id LIMIT ?", [*params, limit])
    return _attach(cur, queue, [Item(*r) for r in cur.fetchall()], now)


def progress(cur: Any, queues: list[QueueRow], now: datetime) -> dict[tuple[str, str], dict[str, int]]:
    """Per (project, queue): total items and how many are in each status."""
    out = {(q.project, q.name): {"total": 0, **dict.fromkeys(STATUSES, 0)} for q in queues}
    if not queues:
        return out
    projects = sorted({q.project for q in queues})
    marks = ", ".join("?" for _ in projects)
    cur.execute(
        f"""
        SELECT project, queue,
            if(status = 'pending' AND (project, queue, trace_id) IN (
                SELECT project, queue, trace_id FROM queue_claims WHERE lease_until > ? AND project IN ({marks})),
               'in_progress', status) AS s, count()
        FROM queue_items WHERE project IN ({marks}) GROUP BY project, queue, s
        """, [now, *projects, *projects],
    )
    for project, name, status, n in cur.fetchall():
        counts = out.get((project, name))
        if counts is not None and status in counts:
            counts[status] += n
            counts["total"] += n
    return out


def _claim(conn: WorkConnection, queue: QueueRow, trace_id: str, user: str, claimed_at: datetime,
           lease_until: datetime) -> None:
    conn.insert(QUEUE_CLAIMS, [{"project": queue.project, "queue": queue.name, "trace_id": trace_id,
                                "user_name": user, "claimed_at": claimed_at, "lease_until": lease_until,
                                "revision": next_revision(), "is_deleted": 0}])


def take_next(conn: WorkConnection, queue: QueueRow, user: str, now: datetime) -> Item | None:
    """Work thread only: the item `user` holds (lease renewed), else the oldest item open to them
    (now held by them), else None when nothing is left for them."""
    lease_until = now + timedelta(seconds=queue.spec.lease_s)
    key = [queue.project, queue.name]
    conn.execute(
        "SELECT c.trace_id, c.claimed_at FROM queue_claims c "
        "JOIN (SELECT trace_id FROM queue_items WHERE project = ? AND queue = ? AND status = 'pending') i "
        "ON i.trace_id = c.trace_id "
        "WHERE c.project = ? AND c.queue = ? AND c.user_name = ? AND c.lease_until > ? "
        "ORDER BY c.claimed_at LIMIT 1", [*key, *key, user, now],
    )
    held = conn.fetchall()
    if held:
        trace_id, claimed_at = held[0]
        _claim(conn, queue, trace_id, user, claimed_at, lease_until)
        return get_item(conn, queue, trace_id, now)
    conn.execute(
        f"""
        SELECT trace_id FROM queue_items
        WHERE project = ? AND queue = ? AND status = 'pending'
          AND trace_id NOT IN (SELECT trace_id FROM queue_labels WHERE project = ? AND queue = ? AND user_name = ?)
          AND trace_id NOT IN (
              SELECT trace_id FROM (
                  SELECT trace_id FROM queue_labels WHERE project = ? AND queue = ?
                  UNION ALL {_LIVE_CLAIMS}
              ) GROUP BY trace_id HAVING count() >= ?)
        ORDER BY added_at, run_start, trace_id LIMIT 1
        """, [*key, *key, user, *key, *key, now, queue.spec.labels_per_item],
    )
    open_rows = conn.fetchall()
    if not open_rows:
        return None
    trace_id = open_rows[0][0]
    _claim(conn, queue, trace_id, user, now, lease_until)
    return get_item(conn, queue, trace_id, now)


def check_may_decide(conn: Any, queue: QueueRow, trace_id: str, user: str, now: datetime) -> Item:
    """The item, when `user` may decide it now: they hold it, decided it before (a change of mind),
    or it is pending with room for one more person. NotInQueue / NotYours otherwise."""
    item = get_item(conn, queue, trace_id, now)
    if item is None:
        raise NotInQueue(f"run {trace_id} is not in queue {queue.name!r}")
    held, decided = _holders_and_deciders(conn, queue, trace_id, now)
    if user in held or user in decided:
        return item
    if item.status in (DONE, SKIPPED):
        raise NotYours(f"run {trace_id} is already {item.status} in queue {queue.name!r}")
    if len(held) + len(decided) >= queue.spec.labels_per_item:
        raise NotYours(f"run {trace_id} is taken by {', '.join(sorted(held)) or 'others'}; "
                       f"ask GET /api/queues/{queue.name}/next for another")
    return item


def decide(conn: WorkConnection, queue: QueueRow, trace_id: str, user: str, decision: str,
           values: dict[str, Any], score_ids: dict[str, str], comment: str | None, now: datetime) -> Item:
    """Work thread only: record `user`'s decision (a new version of theirs replaces an earlier one),
    withdraw their hold, and settle the item's status."""
    check_may_decide(conn, queue, trace_id, user, now)
    key = [queue.project, queue.name, trace_id]
    conn.insert(QUEUE_LABELS, [{
        "project": queue.project, "queue": queue.name, "trace_id": trace_id, "user_name": user,
        "decision": decision, "values": json.dumps(values), "score_ids": json.dumps(score_ids), "comment": comment,
        "decided_at": now, "revision": next_revision(), "is_deleted": 0,
    }])
    conn.rewrite(QUEUE_CLAIMS, "project = ? AND queue = ? AND trace_id = ? AND user_name = ?", [*key, user],
                 {"is_deleted": 1})
    conn.execute("SELECT count(), countIf(decision = ?) FROM queue_labels WHERE project = ? AND queue = ? "
                 "AND trace_id = ?", [LABELLED, *key])
    total, labelled = conn.fetchone()  # type: ignore[misc]
    if total >= queue.spec.labels_per_item:
        status, decided_at = (DONE if labelled else SKIPPED), now
    else:
        status, decided_at = PENDING, None
    conn.rewrite(QUEUE_ITEMS, "project = ? AND queue = ? AND trace_id = ?", key,
                 {"status": status, "decided_at": decided_at})
    found = get_item(conn, queue, trace_id, now)
    assert found is not None
    return found
