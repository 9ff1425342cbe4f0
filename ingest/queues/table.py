"""The `annotation_queues` table: create, read, replace and delete queue definitions.

Why every write is a writer-thread function (`SpanStore.run_write`): "create unless it exists" and
"delete the queue with its items" are a read and writes with nobody in between, which the single
writer gives without keys or locks. Reads take the caller's readable projects and never return a
queue of another project.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import duckdb

from ingest.queries.filters import Where, project_clause
from ingest.queues.model import DeclaredQueue, QueueFilter, QueueSpec

_COLUMNS = ("project, name, description, filter, sampling_rate, score_configs, assignees, labels_per_item, "
            "lease_s, declared, watermark, created_at, created_by, updated_at")
# every table holding rows of one queue, in the order a delete empties them
QUEUE_TABLES = ("queue_claims", "queue_labels", "queue_items")


class QueueExists(Exception):
    """A queue of that name already exists in the project."""


class DeclaredInConfig(Exception):
    """The queue comes from steplens.toml; the file owns it (edit it there and restart)."""


@dataclass(frozen=True)
class QueueRow:
    project: str
    spec: QueueSpec
    declared: bool
    watermark: datetime
    created_at: datetime
    created_by: str | None
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.spec.name


def _row(r: tuple) -> QueueRow:
    filter_json = r[3] if isinstance(r[3], str) else json.dumps(r[3])
    spec = QueueSpec(name=r[1], description=r[2], filter=QueueFilter.model_validate_json(filter_json),
                     sampling_rate=r[4], score_configs=list(r[5]), assignees=list(r[6]), labels_per_item=r[7],
                     lease_s=r[8])
    return QueueRow(r[0], spec, bool(r[9]), r[10], r[11], r[12], r[13])


def get(cur: duckdb.DuckDBPyConnection, project: str, name: str) -> QueueRow | None:
    rows = cur.execute(f"SELECT {_COLUMNS} FROM annotation_queues WHERE project = ? AND name = ?",
                       [project, name]).fetchall()
    return _row(rows[0]) if rows else None


def list_queues(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None) -> list[QueueRow]:
    """Queues of the readable projects (None: every project), by project and name."""
    where = Where()
    project_clause(where, projects)
    rows = cur.execute(f"SELECT {_COLUMNS} FROM annotation_queues WHERE {where.sql()} ORDER BY project, name",
                       where.params).fetchall()
    return [_row(r) for r in rows]


def _values(spec: QueueSpec) -> list[object]:
    return [spec.description, spec.filter.model_dump_json(), spec.sampling_rate, spec.score_configs,
            spec.assignees, spec.labels_per_item, spec.lease_s]


def insert(conn: duckdb.DuckDBPyConnection, project: str, spec: QueueSpec, by: str | None, now: datetime,
           declared: bool = False) -> QueueRow:
    """Writer thread only. The watermark starts at `now`: runs that end from now on enter as they
    arrive; earlier ones only by backfill."""
    if get(conn, project, spec.name) is not None:
        raise QueueExists(f"queue {spec.name!r} already exists in project {project!r}")
    conn.execute(f"INSERT INTO annotation_queues ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 [project, spec.name, *_values(spec), declared, now, now, by, now])
    found = get(conn, project, spec.name)
    assert found is not None
    return found


def replace(conn: duckdb.DuckDBPyConnection, project: str, spec: QueueSpec, now: datetime,
            declared_ok: bool = False) -> QueueRow | None:
    """Writer thread only. A new definition for an existing queue; its items, labels and watermark
    stay (runs already in it stay in it). None when there is no such queue."""
    current = get(conn, project, spec.name)
    if current is None:
        return None
    if current.declared and not declared_ok:
        raise DeclaredInConfig(f"queue {spec.name!r} is declared in steplens.toml; change it there")
    conn.execute(
        "UPDATE annotation_queues SET description = ?, filter = ?, sampling_rate = ?, score_configs = ?, "
        "assignees = ?, labels_per_item = ?, lease_s = ?, updated_at = ? WHERE project = ? AND name = ?",
        [*_values(spec), now, project, spec.name],
    )
    return get(conn, project, spec.name)


def delete(conn: duckdb.DuckDBPyConnection, project: str, name: str) -> bool:
    """Writer thread only. The queue, its items, claims and decisions (the scores people wrote stay:
    they are the run's, not the queue's)."""
    current = get(conn, project, name)
    if current is None:
        return False
    if current.declared:
        raise DeclaredInConfig(f"queue {name!r} is declared in steplens.toml; remove it there")
    conn.execute("BEGIN TRANSACTION")
    try:
        for table in QUEUE_TABLES:  # module constants, never input
            conn.execute(f"DELETE FROM {table} WHERE project = ? AND queue = ?", [project, name])
        conn.execute("DELETE FROM annotation_queues WHERE project = ? AND name = ?", [project, name])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True


def sync_declared(conn: duckdb.DuckDBPyConnection, declared: list[DeclaredQueue], now: datetime) -> None:
    """Writer thread only, at startup: every `[[queues]]` entry exists as the file says (a new one
    starts its watermark now; an existing one keeps its items and watermark). A queue the file no
    longer declares stays, editable through the API like any other."""
    names = {(q.project, q.name) for q in declared}
    for row in list_queues(conn, None):
        if row.declared and (row.project, row.name) not in names:
            conn.execute("UPDATE annotation_queues SET declared = false WHERE project = ? AND name = ?",
                         [row.project, row.name])
    for queue in declared:
        spec = QueueSpec.model_validate(queue.model_dump(exclude={"project"}))
        if get(conn, queue.project, queue.name) is None:
            insert(conn, queue.project, spec, "steplens.toml", now, declared=True)
        else:
            replace(conn, queue.project, spec, now, declared_ok=True)
            conn.execute("UPDATE annotation_queues SET declared = true WHERE project = ? AND name = ?",
                         [queue.project, queue.name])
