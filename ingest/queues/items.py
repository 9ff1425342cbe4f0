"""A queue's items: who holds one (a claim with a lease), who decided what, and the item's status.

An item needs `labels_per_item` people's decisions; a decision is a label (values written as
scores) or a skip. It is `done` once it has that many decisions and at least one is a label,
`skipped` when all of them are skips, else `pending`; a pending item someone holds under an
unexpired lease reads as `in_progress`. A person takes at most one item of a queue at a time (asking
again returns the same item and renews the lease), never an item they already decided, and never
one that enough others hold or decided. A person may change their own decision later (a new label
replaces theirs; the scores keep their ids, so the new values replace the old ones).

Every write runs on the store's writer thread: taking an item is a read and an insert with nobody
in between, so two people asking at once never get the one remaining slot both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import duckdb

from ingest.queues.table import QueueRow

PENDING, IN_PROGRESS, DONE, SKIPPED = "pending", "in_progress", "done", "skipped"
STATUSES = (PENDING, IN_PROGRESS, DONE, SKIPPED)
LABELLED = "labelled"


class NotInQueue(Exception):
    """The run is not an item of the queue."""


class NotYours(Exception):
    """The person may not decide this item now (others hold or decided enough of it, or it is closed)."""


@dataclass(frozen=True)
class Decision:
    user: str
    decision: str  # labelled | skipped
    values: dict[str, Any]
    score_ids: dict[str, str]
    comment: str | None
    decided_at: datetime


@dataclass
class Item:
    project: str
    queue: str
    trace_id: str
    run_start: datetime | None
    added_at: datetime
    source: str
    status: str
    decided_at: datetime | None
    held_by: list[str] = field(default_factory=list)  # people holding it under a live lease
    decisions: list[Decision] = field(default_factory=list)


_ITEM_COLUMNS = "project, queue, trace_id, run_start, added_at, source, status, decided_at"


def _json(value: Any) -> Any:
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else value


def _attach(cur: duckdb.DuckDBPyConnection, queue: QueueRow, items: list[Item], now: datetime) -> list[Item]:
    """Fill in each item's live holders and decisions; a held pending item reads as in progress."""
    if not items:
        return items
    by_id = {i.trace_id: i for i in items}
    ids = sorted(by_id)
    marks = ", ".join("?" for _ in ids)
    claims = cur.execute(
        f"SELECT trace_id, user_name FROM queue_claims WHERE project = ? AND queue = ? AND lease_until > ? "
        f"AND trace_id IN ({marks}) ORDER BY claimed_at, user_name", [queue.project, queue.name, now, *ids],
    ).fetchall()
    for trace_id, user in claims:
        by_id[trace_id].held_by.append(user)
    labels = cur.execute(
        f'SELECT trace_id, user_name, decision, "values", score_ids, comment, decided_at FROM queue_labels '
        f"WHERE project = ? AND queue = ? AND trace_id IN ({marks}) ORDER BY decided_at, user_name",
        [queue.project, queue.name, *ids],
    ).fetchall()
    for trace_id, user, decision, values, score_ids, comment, at in labels:
        by_id[trace_id].decisions.append(Decision(user, decision, _json(values) or {}, _json(score_ids) or {},
                                                  comment, at))
    for item in items:
        if item.status == PENDING and item.held_by:
            item.status = IN_PROGRESS
    return items


def _items(cur: duckdb.DuckDBPyConnection, queue: QueueRow, where: str, params: list[Any], now: datetime,
           tail: str = "", tail_params: list[Any] | None = None) -> list[Item]:
    rows = cur.execute(
        f"SELECT {_ITEM_COLUMNS} FROM queue_items WHERE project = ? AND queue = ? AND ({where}) {tail}",
        [queue.project, queue.name, *params, *(tail_params or [])],
    ).fetchall()
    return _attach(cur, queue, [Item(*r) for r in rows], now)


def get_item(cur: duckdb.DuckDBPyConnection, queue: QueueRow, trace_id: str, now: datetime) -> Item | None:
    found = _items(cur, queue, "trace_id = ?", [trace_id], now)
    return found[0] if found else None


def list_items(cur: duckdb.DuckDBPyConnection, queue: QueueRow, now: datetime, status: str | None = None,
               limit: int = 100, after: tuple[datetime, str] | None = None) -> list[Item]:
    """Items in the order they entered (then by trace id), after the keyset `after` if given."""
    clauses, params = ["TRUE"], []
    if status in (PENDING, IN_PROGRESS):
        clauses.append("status = 'pending'")
        live = ("EXISTS (SELECT 1 FROM queue_claims c WHERE c.project = queue_items.project AND "
                "c.queue = queue_items.queue AND c.trace_id = queue_items.trace_id AND c.lease_until > ?)")
        clauses.append(live if status == IN_PROGRESS else f"NOT {live}")
        params.append(now)
    elif status is not None:
        clauses.append("status = ?")
        params.append(status)
    if after is not None:
        clauses.append("(added_at > ? OR (added_at = ? AND trace_id > ?))")
        params += [after[0], after[0], after[1]]
    return _items(cur, queue, " AND ".join(clauses), params, now, "ORDER BY added_at, trace_id LIMIT ?", [limit])


def progress(cur: duckdb.DuckDBPyConnection, queues: list[QueueRow], now: datetime) -> dict[tuple[str, str], dict[str, int]]:
    """Per (project, queue): total items and how many are in each status."""
    out = {(q.project, q.name): {"total": 0, **dict.fromkeys(STATUSES, 0)} for q in queues}
    if not queues:
        return out
    projects = sorted({q.project for q in queues})
    rows = cur.execute(
        f"""
        SELECT i.project, i.queue,
            CASE WHEN i.status = 'pending' AND EXISTS (SELECT 1 FROM queue_claims c WHERE c.project = i.project
                AND c.queue = i.queue AND c.trace_id = i.trace_id AND c.lease_until > ?) THEN 'in_progress'
                ELSE i.status END AS s, count(*)
        FROM queue_items i WHERE i.project IN ({", ".join("?" for _ in projects)}) GROUP BY ALL
        """, [now, *projects],
    ).fetchall()
    for project, name, status, n in rows:
        counts = out.get((project, name))
        if counts is not None and status in counts:
            counts[status] += n
            counts["total"] += n
    return out


def _holders_and_deciders(conn: duckdb.DuckDBPyConnection, queue: QueueRow, trace_id: str, now: datetime
                          ) -> tuple[set[str], set[str]]:
    held = {r[0] for r in conn.execute(
        "SELECT user_name FROM queue_claims WHERE project = ? AND queue = ? AND trace_id = ? AND lease_until > ?",
        [queue.project, queue.name, trace_id, now]).fetchall()}
    decided = {r[0] for r in conn.execute(
        "SELECT user_name FROM queue_labels WHERE project = ? AND queue = ? AND trace_id = ?",
        [queue.project, queue.name, trace_id]).fetchall()}
    return held, decided


def take_next(conn: duckdb.DuckDBPyConnection, queue: QueueRow, user: str, now: datetime) -> Item | None:
    """Writer thread only: the item `user` holds (lease renewed), else the oldest item open to them
    (now held by them), else None when nothing is left for them."""
    lease_until = now + timedelta(seconds=queue.spec.lease_s)
    key = [queue.project, queue.name]
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM queue_claims WHERE project = ? AND queue = ? AND lease_until <= ?", [*key, now])
        held = conn.execute(
            "SELECT c.trace_id FROM queue_claims c JOIN queue_items i ON i.project = c.project AND i.queue = c.queue "
            "AND i.trace_id = c.trace_id WHERE c.project = ? AND c.queue = ? AND c.user_name = ? "
            "AND i.status = 'pending' ORDER BY c.claimed_at LIMIT 1", [*key, user],
        ).fetchall()
        if held:
            trace_id = held[0][0]
            conn.execute("UPDATE queue_claims SET lease_until = ? WHERE project = ? AND queue = ? AND trace_id = ? "
                         "AND user_name = ?", [lease_until, *key, trace_id, user])
        else:
            open_rows = conn.execute(
                """
                SELECT i.trace_id FROM queue_items i
                WHERE i.project = ? AND i.queue = ? AND i.status = 'pending'
                  AND NOT EXISTS (SELECT 1 FROM queue_labels l WHERE l.project = i.project AND l.queue = i.queue
                                  AND l.trace_id = i.trace_id AND l.user_name = ?)
                  AND (SELECT count(*) FROM queue_labels l WHERE l.project = i.project AND l.queue = i.queue
                       AND l.trace_id = i.trace_id)
                    + (SELECT count(*) FROM queue_claims c WHERE c.project = i.project AND c.queue = i.queue
                       AND c.trace_id = i.trace_id) < ?
                ORDER BY i.added_at, i.run_start, i.trace_id LIMIT 1
                """, [*key, user, queue.spec.labels_per_item],
            ).fetchall()
            if not open_rows:
                conn.execute("COMMIT")
                return None
            trace_id = open_rows[0][0]
            conn.execute("INSERT INTO queue_claims VALUES (?, ?, ?, ?, ?, ?)", [*key, trace_id, user, now, lease_until])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return get_item(conn, queue, trace_id, now)


def check_may_decide(conn: duckdb.DuckDBPyConnection, queue: QueueRow, trace_id: str, user: str,
                     now: datetime) -> Item:
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


def decide(conn: duckdb.DuckDBPyConnection, queue: QueueRow, trace_id: str, user: str, decision: str,
           values: dict[str, Any], score_ids: dict[str, str], comment: str | None, now: datetime) -> Item:
    """Writer thread only: record `user`'s decision (replacing an earlier one of theirs), release their
    hold, and settle the item's status."""
    check_may_decide(conn, queue, trace_id, user, now)
    key = [queue.project, queue.name, trace_id]
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM queue_labels WHERE project = ? AND queue = ? AND trace_id = ? AND user_name = ?",
                     [*key, user])
        conn.execute(
            'INSERT INTO queue_labels (project, queue, trace_id, user_name, decision, "values", score_ids, comment, '
            "decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [*key, user, decision, json.dumps(values), json.dumps(score_ids), comment, now],
        )
        conn.execute("DELETE FROM queue_claims WHERE project = ? AND queue = ? AND trace_id = ? AND user_name = ?",
                     [*key, user])
        total, labelled = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE decision = ?) FROM queue_labels "
            "WHERE project = ? AND queue = ? AND trace_id = ?", [LABELLED, *key],
        ).fetchone()  # type: ignore[misc]
        if total >= queue.spec.labels_per_item:
            status, decided_at = (DONE if labelled else SKIPPED), now
        else:
            status, decided_at = PENDING, None
        conn.execute("UPDATE queue_items SET status = ?, decided_at = ? WHERE project = ? AND queue = ? AND trace_id = ?",
                     [status, decided_at, *key])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    found = get_item(conn, queue, trace_id, now)
    assert found is not None
    return found
