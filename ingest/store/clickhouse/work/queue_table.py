"""ClickHouse form of `ingest.queues.table`: queue definitions, with the same functions, rows and
exceptions.

Differences that keep DuckDB's meaning: a change is a new row version (`revision`), a delete a
tombstone of the queue and of every item, claim and decision of it; the live filler's watermark is
kept in `queue_watermarks` (written by the worker only, keyed by the queue's created_at) and read
here as the later of it and the queue's starting watermark.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.filters import Where, project_clause
from ingest.queues.model import DeclaredQueue, QueueSpec
from ingest.queues.table import DeclaredInConfig, QueueExists, QueueRow, _row
from ingest.store.clickhouse.schema_work import (
    ANNOTATION_QUEUES,
    QUEUE_CLAIMS,
    QUEUE_ITEMS,
    QUEUE_LABELS,
    QUEUE_WATERMARKS,
)
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision

__all__ = ["DeclaredInConfig", "QueueExists", "QueueRow", "delete", "get", "insert", "list_queues", "replace",
           "sync_declared"]

_COLUMNS = ("project, name, description, filter, sampling_rate, score_configs, assignees, labels_per_item, "
            "lease_s, declared, watermark, created_at, created_by, updated_at")
_WATERMARK = 10  # index of `watermark` in _COLUMNS


def _rows(cur: Any, where: Where) -> list[QueueRow]:
    cur.execute(f"SELECT {_COLUMNS} FROM {ANNOTATION_QUEUES.name} WHERE {where.sql()} ORDER BY project, name",
                where.params)
    rows = [list(r) for r in cur.fetchall()]
    if not rows:
        return []
    marks = Where()
    project_clause(marks, frozenset(r[0] for r in rows))
    cur.execute(f"SELECT project, queue, created_at, max(watermark) FROM {QUEUE_WATERMARKS.name} WHERE {marks.sql()} "
                "GROUP BY project, queue, created_at", marks.params)
    moved = {(p, q, c): w for p, q, c, w in cur.fetchall()}
    for r in rows:
        w = moved.get((r[0], r[1], r[11]))
        if w is not None and w > r[_WATERMARK]:
            r[_WATERMARK] = w
    return [_row(tuple(r)) for r in rows]


def get(cur: Any, project: str, name: str) -> QueueRow | None:
    where = Where()
    where.add("project = ?", project)
    where.add("name = ?", name)
    found = _rows(cur, where)
    return found[0] if found else None


def list_queues(cur: Any, projects: frozenset[str] | None) -> list[QueueRow]:
    """Queues of the readable projects (None: every project), by project and name."""
    where = Where()
    project_clause(where, projects)
    return _rows(cur, where)


def _write(conn: WorkConnection, project: str, spec: QueueSpec, declared: bool, watermark: datetime,
           created_at: datetime, by: str | None, now: datetime) -> None:
    conn.insert(ANNOTATION_QUEUES, [{
        "project": project, "name": spec.name, "description": spec.description,
        "filter": spec.filter.model_dump_json(), "sampling_rate": spec.sampling_rate,
        "score_configs": spec.score_configs, "assignees": spec.assignees, "labels_per_item": spec.labels_per_item,
        "lease_s": spec.lease_s, "declared": declared, "watermark": watermark, "created_at": created_at,
        "created_by": by, "updated_at": now, "revision": next_revision(), "is_deleted": 0,
    }])


def insert(conn: WorkConnection, project: str, spec: QueueSpec, by: str | None, now: datetime,
           declared: bool = False) -> QueueRow:
    """Work thread only. The watermark starts at `now` (runs that end from now on enter as they
    arrive; earlier ones only by backfill)."""
    if get(conn, project, spec.name) is not None:
        raise QueueExists(f"queue {spec.name!r} already exists in project {project!r}")
    _write(conn, project, spec, declared, now, now, by, now)
    found = get(conn, project, spec.name)
    assert found is not None
    return found


def replace(conn: WorkConnection, project: str, spec: QueueSpec, now: datetime,
            declared_ok: bool = False) -> QueueRow | None:
    """Work thread only. A new definition for an existing queue; its items, labels and watermark stay."""
    current = get(conn, project, spec.name)
    if current is None:
        return None
    if current.declared and not declared_ok:
        raise DeclaredInConfig(f"queue {spec.name!r} is declared in steplens.toml; change it there")
    _write(conn, project, spec, current.declared, current.watermark, current.created_at, current.created_by, now)
    return get(conn, project, spec.name)


def _set_declared(conn: WorkConnection, project: str, name: str, declared: bool) -> None:
    conn.rewrite(ANNOTATION_QUEUES, "project = ? AND name = ?", [project, name], {"declared": declared})


def delete(conn: WorkConnection, project: str, name: str) -> bool:
    """Work thread only. The queue, its items, claims and decisions become tombstones (the scores
    people wrote stay: they are the run's, not the queue's). The queue goes first: once it is
    gone no read reaches its items, whatever a crash leaves of the rest."""
    current = get(conn, project, name)
    if current is None:
        return False
    if current.declared:
        raise DeclaredInConfig(f"queue {name!r} is declared in steplens.toml; remove it there")
    conn.rewrite(ANNOTATION_QUEUES, "project = ? AND name = ?", [project, name], {"is_deleted": 1})
    for table in (QUEUE_CLAIMS, QUEUE_LABELS, QUEUE_ITEMS):
        conn.rewrite(table, "project = ? AND queue = ?", [project, name], {"is_deleted": 1})
    return True


def sync_declared(conn: WorkConnection, declared: list[DeclaredQueue], now: datetime) -> None:
    """Work thread only, at startup: every `[[queues]]` entry exists as the file says; a queue the
    file no longer declares stays, editable through the API like any other."""
    names = {(q.project, q.name) for q in declared}
    for row in list_queues(conn, None):
        if row.declared and (row.project, row.name) not in names:
            _set_declared(conn, row.project, row.name, False)
    for queue in declared:
        spec = QueueSpec.model_validate(queue.model_dump(exclude={"project"}))
        current = get(conn, queue.project, queue.name)
        if current is None:
            insert(conn, queue.project, spec, "steplens.toml", now, declared=True)
        else:
            _write(conn, queue.project, spec, True, current.watermark, current.created_at, current.created_by, now)


def move_watermark(conn: WorkConnection, queue: QueueRow, watermark: datetime) -> None:
    """Worker only (the live filler): the queue's runs updated up to `watermark` were looked at."""
    conn.insert(QUEUE_WATERMARKS, [{"project": queue.project, "queue": queue.name, "created_at": queue.created_at,
                                    "watermark": watermark}])
