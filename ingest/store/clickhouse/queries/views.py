"""ClickHouse form of `ingest.queries.views`: saved views, read and written with DuckDB's functions,
rows and errors (ViewSpec, ViewRow, NameTaken are the DuckDB module's own classes).

How a write works on ReplacingMergeTree(updated_at) keyed (project, view_id)
(ingest/store/clickhouse/schema_views.py): every write inserts the view's whole row, an update
with the new content, a delete with `is_deleted = 1`, and reads take the newest row of each view
(FINAL) that is not a tombstone. A write's `updated_at` is later than the row it replaces even
when this node's clock is behind the one that wrote it, so the newest write always wins.

"A name is unique in its project" across nodes: the writes of one node are serialized
(`ClickHouseStore.run_write`); between nodes, a create or rename checks the name before writing
and again after. Finding another view of that name afterwards undoes its own write and answers
NameTaken, so two nodes racing for one name never both keep it (both may refuse: the caller
retries).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ingest.clock import utcnow as _now
from ingest.queries.filters import Where, project_clause
from ingest.queries.views import NameTaken, ViewRow, ViewSpec, _row, view_state

__all__ = ["NameTaken", "ViewRow", "ViewSpec", "delete_view", "get_view", "insert_view", "list_views",
           "update_view", "view_state"]  # fmt: skip

_COLUMNS = "view_id, project, name, page, filter, since, until, params, created_by, created_at, updated_at"
_VIEWS = "saved_views FINAL"
_TICK = timedelta(microseconds=1)


def _scoped(projects: frozenset[str] | None) -> Where:
    where = Where()
    project_clause(where, projects)
    where.add("is_deleted = 0")
    return where


def list_views(cur: Any, projects: frozenset[str] | None, page: str | None) -> list[ViewRow]:
    """The views of `projects` (None: every project), by name."""
    where = _scoped(projects)
    if page is not None:
        where.add("page = ?", page)
    cur.execute(
        f"SELECT {_COLUMNS} FROM {_VIEWS} WHERE {where.sql()} ORDER BY lowerUTF8(name), name, project", where.params
    )
    return [_row(r) for r in cur.fetchall()]


def get_view(cur: Any, view_id: str, projects: frozenset[str] | None) -> ViewRow | None:
    where = _scoped(projects)
    where.add("view_id = ?", view_id)
    cur.execute(f"SELECT {_COLUMNS} FROM {_VIEWS} WHERE {where.sql()}", where.params)
    rows = cur.fetchall()
    return _row(rows[0]) if rows else None


def _name_taken(cur: Any, project: str, name: str, except_id: str) -> bool:
    cur.execute(
        f"SELECT count() FROM {_VIEWS} WHERE project = ? AND name = ? AND view_id != ? AND is_deleted = 0",
        [project, name, except_id],
    )
    found = cur.fetchone()
    return bool(found and found[0])


def _write(cur: Any, row: ViewRow, deleted: bool = False) -> None:
    """Insert `row` as the view's newest version (`deleted`: as its tombstone)."""
    params_json = json.dumps(row.params, ensure_ascii=False, sort_keys=True)  # as DuckDB's module stores it
    cur.command(
        f"INSERT INTO saved_views ({_COLUMNS}, is_deleted) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?",
        [row.view_id, row.project, row.name, row.page, row.filter, row.since, row.until, params_json,
         row.created_by, row.created_at, row.updated_at, 1 if deleted else 0],
    )  # fmt: skip


def _after(previous: datetime) -> datetime:
    """Now, or just after `previous` when this node's clock is behind the write it replaces."""
    return max(_now(), previous + _TICK)


def _with(base: ViewRow, spec: ViewSpec, updated_at: datetime) -> ViewRow:
    """`base` with `spec`'s content: its id, project, author and creation stay."""
    return replace(base, name=spec.name, page=spec.page, filter=spec.filter, since=spec.since, until=spec.until,
                   params=dict(spec.params), updated_at=updated_at)  # fmt: skip


def insert_view(cur: Any, project: str, spec: ViewSpec, created_by: str | None) -> ViewRow:
    """NameTaken when the project already has a view of that name (checked before and after)."""
    view_id = uuid.uuid4().hex
    if _name_taken(cur, project, spec.name, view_id):
        raise NameTaken(spec.name, project)
    now = _now()
    row = ViewRow(view_id, project, spec.name, spec.page, spec.filter, spec.since, spec.until, dict(spec.params),
                  created_by, now, now)  # fmt: skip
    _write(cur, row)
    if _name_taken(cur, project, spec.name, view_id):  # another node saved the name meanwhile
        _write(cur, replace(row, updated_at=now + _TICK), deleted=True)
        raise NameTaken(spec.name, project)
    found = get_view(cur, view_id, None)
    assert found is not None
    return found


def update_view(cur: Any, view_id: str, projects: frozenset[str] | None, spec: ViewSpec) -> ViewRow | None:
    """Replace a view's content (its id, project and creation stay). None when absent."""
    current = get_view(cur, view_id, projects)
    if current is None:
        return None
    if _name_taken(cur, current.project, spec.name, view_id):
        raise NameTaken(spec.name, current.project)
    written = _with(current, spec, _after(current.updated_at))
    _write(cur, written)
    if spec.name != current.name and _name_taken(cur, current.project, spec.name, view_id):
        _write(cur, replace(current, updated_at=written.updated_at + _TICK))  # the rename is undone
        raise NameTaken(spec.name, current.project)
    return get_view(cur, view_id, projects)


def delete_view(cur: Any, view_id: str, projects: frozenset[str] | None) -> bool:
    """False when absent (or another project's)."""
    current = get_view(cur, view_id, projects)
    if current is None:
        return False
    _write(cur, replace(current, updated_at=_after(current.updated_at)), deleted=True)
    return True
