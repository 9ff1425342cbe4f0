"""ClickHouse form of `ingest.datasets.store`: saving a dataset whole, listing, reading it back.

Why a dataset is never seen half-saved without a transaction: its cases are inserted first, keyed by
the saving's `created_at`, and the `datasets` row naming that `created_at` last; a reader takes the
cases of the created_at its `datasets` row names, so until that row is in it reads the old cases,
and after it the new ones. The old cases then become tombstones. The api node writes datasets.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ingest.datasets.model import DatasetInfo
from ingest.datasets.store import DatasetExists
from ingest.queries.filters import Where, project_clause
from ingest.store.clickhouse.schema_work import DATASET_CASES, DATASETS
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision

__all__ = ["DatasetExists", "case_lines", "find", "list_datasets", "save"]

_INFO = "project, name, description, cases, created_at, created_by"


def save(conn: WorkConnection, info: DatasetInfo, selection: dict[str, Any], cases: list[dict[str, Any]],
         replace: bool) -> None:
    """Store `cases` as dataset `info.name` of `info.project` (work thread), all or nothing visible."""
    exists = conn.execute("SELECT count() FROM datasets WHERE project = ? AND name = ?",
                          [info.project, info.name]).fetchone()
    if exists and exists[0] and not replace:
        raise DatasetExists(f"dataset {info.name!r} exists in project {info.project!r}; send replace: true")
    revision = next_revision()
    key = hashlib.sha256(f"{info.project}\x1f{info.name}\x1f{info.created_at.isoformat()}".encode()).hexdigest()
    conn.insert(DATASET_CASES, [
        {"project": info.project, "dataset": info.name, "dataset_created_at": info.created_at, "position": i,
         "case_id": c["id"], "trace_id": c["source"]["trace_id"], "body": json.dumps(c, ensure_ascii=False),
         "revision": revision, "is_deleted": 0}
        for i, c in enumerate(cases)
    ], token=f"steplens:dataset_cases:{key}")
    conn.insert(DATASETS, [{
        "project": info.project, "name": info.name, "description": info.description,
        "selection": json.dumps(selection), "cases": info.cases, "created_at": info.created_at,
        "created_by": info.created_by, "revision": next_revision(), "is_deleted": 0,
    }])
    conn.rewrite(DATASET_CASES, "project = ? AND dataset = ? AND dataset_created_at != ?",
                 [info.project, info.name, info.created_at], {"is_deleted": 1})


def _infos(cur: Any, where: Where) -> list[DatasetInfo]:
    cur.execute(f"SELECT {_INFO} FROM datasets WHERE {where.sql()} ORDER BY project, name", where.params)
    return [DatasetInfo(**dict(zip(_INFO.split(", "), r, strict=True))) for r in cur.fetchall()]


def list_datasets(cur: Any, projects: frozenset[str] | None) -> list[DatasetInfo]:
    where = Where()
    project_clause(where, projects)
    return _infos(cur, where)


def find(cur: Any, projects: frozenset[str] | None, name: str) -> list[DatasetInfo]:
    """The datasets called `name` among readable projects (one per project)."""
    where = Where()
    project_clause(where, projects)
    where.add("name = ?", name)
    return _infos(cur, where)


def case_lines(cur: Any, project: str, name: str) -> list[str]:
    """The dataset's cases in order (those of its current saving), each the JSON text of one JSONL line."""
    # or the zero time: cases `steplens migrate` copied from DuckDB, which has no such column (their
    # saving's cases are the only ones of the dataset; a later save tombstones them)
    cur.execute(
        "SELECT body FROM dataset_cases WHERE project = ? AND dataset = ? AND (dataset_created_at = "
        "(SELECT any(created_at) FROM datasets WHERE project = ? AND name = ?) OR toUnixTimestamp64Micro("
        "dataset_created_at) = 0) ORDER BY position",
        [project, name, project, name],
    )
    return [json.dumps(json.loads(r[0]), ensure_ascii=False, separators=(", ", ": ")) for r in cur.fetchall()]
