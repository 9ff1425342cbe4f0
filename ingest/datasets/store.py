"""The `datasets` and `dataset_cases` tables: saving a dataset whole, listing, reading it back in order.

Why a dataset is written in one transaction on the writer thread: a dataset is read back as the
JSONL an evaluation runs, so half of one (a crash mid-save, a replace racing a download) must never
be visible: readers see the old cases or the new ones.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from ingest.datasets.model import DatasetInfo
from ingest.queries.filters import Where, project_clause

_INFO = "project, name, description, cases, created_at, created_by"


class DatasetExists(Exception):
    """A dataset of that name exists in the project and the request did not ask to replace it."""


def save(conn: duckdb.DuckDBPyConnection, info: DatasetInfo, selection: dict[str, Any], cases: list[dict[str, Any]],
         replace: bool) -> None:
    """Store `cases` as dataset `info.name` of `info.project` (writer connection), atomically."""
    conn.execute("BEGIN TRANSACTION")
    try:
        exists = conn.execute("SELECT count(*) FROM datasets WHERE project = ? AND name = ?",
                              [info.project, info.name]).fetchone()
        if exists and exists[0] and not replace:
            raise DatasetExists(f"dataset {info.name!r} exists in project {info.project!r}; send replace: true")
        conn.execute("DELETE FROM dataset_cases WHERE project = ? AND dataset = ?", [info.project, info.name])
        conn.execute("DELETE FROM datasets WHERE project = ? AND name = ?", [info.project, info.name])
        conn.execute(
            f"INSERT INTO datasets ({_INFO}, selection) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [info.project, info.name, info.description, info.cases, info.created_at, info.created_by,
             json.dumps(selection)],
        )
        if cases:
            conn.executemany(
                "INSERT INTO dataset_cases (project, dataset, position, case_id, trace_id, body) VALUES (?, ?, ?, ?, ?, ?)",
                [[info.project, info.name, i, c["id"], c["source"]["trace_id"], json.dumps(c, ensure_ascii=False)]
                 for i, c in enumerate(cases)],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _infos(cur: duckdb.DuckDBPyConnection, where: Where) -> list[DatasetInfo]:
    cur.execute(f"SELECT {_INFO} FROM datasets WHERE {where.sql()} ORDER BY project, name", where.params)
    return [DatasetInfo(**dict(zip(_INFO.split(", "), r, strict=True))) for r in cur.fetchall()]


def list_datasets(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None) -> list[DatasetInfo]:
    where = Where()
    project_clause(where, projects)
    return _infos(cur, where)


def find(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None, name: str) -> list[DatasetInfo]:
    """The datasets called `name` among readable projects (one per project)."""
    where = Where()
    project_clause(where, projects)
    where.add("name = ?", name)
    return _infos(cur, where)


def case_lines(cur: duckdb.DuckDBPyConnection, project: str, name: str) -> list[str]:
    """The dataset's cases in order, each the JSON text of one JSONL line."""
    cur.execute("SELECT body FROM dataset_cases WHERE project = ? AND dataset = ? ORDER BY position",
                [project, name])
    return [json.dumps(json.loads(r[0]), ensure_ascii=False, separators=(", ", ": ")) for r in cur.fetchall()]
