"""Rows of `saved_views`: a named filter + time range + dashboards page, per project.

Why the writes are here and run on the store's writer thread (`SpanStore.run_write`): DuckDB has one
write connection, the writer's; and "a name is unique in its project" is a read then a write with
nobody in between only there. Every read and write is confined to the caller's projects: an id of
another project is as absent as an unknown one.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from ingest.clock import utcnow as _now
from ingest.queries.filters import Where, project_clause

_COLUMNS = "view_id, project, name, page, filter, since, until, params, created_by, created_at, updated_at"


@dataclass(frozen=True)
class ViewSpec:
    """What a caller saves: the page and the state that restores it."""

    name: str
    page: str
    filter: str = ""
    since: str | None = None
    until: str | None = None
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ViewRow:
    view_id: str
    project: str
    name: str
    page: str
    filter: str
    since: str | None
    until: str | None
    params: dict[str, str]
    created_by: str | None
    created_at: datetime
    updated_at: datetime


class NameTaken(Exception):
    """Another view of the project has this name."""

    def __init__(self, name: str, project: str) -> None:
        super().__init__(f"a saved view named {name!r} already exists in project {project!r}")


def _row(r: tuple) -> ViewRow:
    params = r[7]
    try:
        parsed = json.loads(params) if isinstance(params, str) else (params or {})
    except ValueError:
        parsed = {}
    return ViewRow(*r[:7], parsed if isinstance(parsed, dict) else {}, *r[8:])


def _scoped(projects: frozenset[str] | None) -> Where:
    where = Where()
    project_clause(where, projects)
    return where


def list_views(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None, page: str | None) -> list[ViewRow]:
    """The views of `projects` (None: every project), by name."""
    where = _scoped(projects)
    if page is not None:
        where.add("page = ?", page)
    rows = cur.execute(
        f"SELECT {_COLUMNS} FROM saved_views WHERE {where.sql()} ORDER BY lower(name), name, project", where.params
    ).fetchall()
    return [_row(r) for r in rows]


def get_view(cur: duckdb.DuckDBPyConnection, view_id: str, projects: frozenset[str] | None) -> ViewRow | None:
    where = _scoped(projects)
    where.add("view_id = ?", view_id)
    rows = cur.execute(f"SELECT {_COLUMNS} FROM saved_views WHERE {where.sql()}", where.params).fetchall()
    return _row(rows[0]) if rows else None


def _check_name(conn: duckdb.DuckDBPyConnection, project: str, name: str, except_id: str | None) -> None:
    taken = conn.execute(
        "SELECT count(*) FROM saved_views WHERE project = ? AND name = ? AND view_id IS DISTINCT FROM ?",
        [project, name, except_id],
    ).fetchone()
    if taken and taken[0]:
        raise NameTaken(name, project)


def _params_json(spec: ViewSpec) -> str:
    return json.dumps(spec.params, ensure_ascii=False, sort_keys=True)


def insert_view(conn: duckdb.DuckDBPyConnection, project: str, spec: ViewSpec, created_by: str | None) -> ViewRow:
    """Writer thread only. NameTaken when the project already has a view of that name."""
    _check_name(conn, project, spec.name, None)
    view_id, now = uuid.uuid4().hex, _now()
    conn.execute(
        f"INSERT INTO saved_views ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [view_id, project, spec.name, spec.page, spec.filter, spec.since, spec.until, _params_json(spec),
         created_by, now, now],
    )  # fmt: skip
    found = get_view(conn, view_id, None)
    assert found is not None
    return found


def update_view(conn: duckdb.DuckDBPyConnection, view_id: str, projects: frozenset[str] | None,
                spec: ViewSpec) -> ViewRow | None:
    """Writer thread only: replace a view's content (its id, project and creation stay). None when absent."""
    current = get_view(conn, view_id, projects)
    if current is None:
        return None
    _check_name(conn, current.project, spec.name, view_id)
    conn.execute(
        "UPDATE saved_views SET name = ?, page = ?, filter = ?, since = ?, until = ?, params = ?, updated_at = ? "
        "WHERE view_id = ? AND project = ?",
        [spec.name, spec.page, spec.filter, spec.since, spec.until, _params_json(spec), _now(), view_id,
         current.project],
    )  # fmt: skip
    return get_view(conn, view_id, projects)


def delete_view(conn: duckdb.DuckDBPyConnection, view_id: str, projects: frozenset[str] | None) -> bool:
    """Writer thread only. False when absent (or another project's)."""
    current = get_view(conn, view_id, projects)
    if current is None:
        return False
    conn.execute("DELETE FROM saved_views WHERE view_id = ? AND project = ?", [view_id, current.project])
    return True


def view_state(row: ViewRow) -> dict[str, Any]:
    """The query parameters that restore the view on its page (what its URL carries)."""
    state: dict[str, Any] = dict(row.params)
    if row.filter:
        state["filter"] = row.filter
    if row.since:
        state["since"] = row.since
    if row.until:
        state["until"] = row.until
    return state
