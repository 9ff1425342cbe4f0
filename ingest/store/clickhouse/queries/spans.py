"""ClickHouse form of `ingest.queries.spans`: `GET /api/spans`, a filter expression, a time range,
keyset pages newest first.

Same page boundary as DuckDB: the last row's (start_time, trace_id, span_id, project), compared as a
tuple, so paging never skips or repeats a span while new ones arrive. The `start_time` bounds use the
spans table's minmax skip index. The predicate must be compiled for ClickHouse
(`span_predicate(..., dialect="clickhouse")`): DuckDB SQL is refused, never sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.filters.compile import Sql
from ingest.queries.filters import Where, project_clause
from ingest.queries.spans import SPAN_COLUMNS, SpanKey, SpansPage
from ingest.store.clickhouse.queries._common import dicts

__all__ = ["SPAN_COLUMNS", "SpanKey", "SpansPage", "list_spans"]

SPAN_SELECT = ", ".join(f"s.{c} AS {c}" for c in SPAN_COLUMNS)


def require_clickhouse(predicate: Sql | None) -> None:
    """A predicate compiled for DuckDB would be wrong SQL here: refuse it before any read."""
    if predicate is not None and predicate.dialect != "clickhouse":
        raise ValueError("the filter was compiled for DuckDB: compile it with dialect='clickhouse'")


def list_spans(
    cur: Any,
    projects: frozenset[str] | None,
    since: datetime | None,
    until: datetime | None,
    predicate: Sql | None,
    limit: int = 50,
    after: SpanKey | None = None,
) -> SpansPage:
    """One page of spans matching `predicate` (over alias `s`), newest first; `next_key` only when more exist."""
    require_clickhouse(predicate)
    where = Where()
    project_clause(where, projects, column="s.project")
    if since is not None:
        where.add("s.start_time >= ?", since)
    if until is not None:
        where.add("s.start_time < ?", until)
    if predicate is not None:
        where.add(predicate.sql, *predicate.params)
    if after is not None:
        where.add("s.start_time <= ?", after.start_time)  # a bare bound first: the skip index prunes by it
        where.add(
            "(s.start_time, s.trace_id, s.span_id, s.project) < (?, ?, ?, ?)",
            after.start_time, after.trace_id, after.span_id, after.project,
        )
    cur.execute(
        f"SELECT {SPAN_SELECT} FROM spans AS s FINAL WHERE {where.sql()} "
        "ORDER BY s.start_time DESC, s.trace_id DESC, s.span_id DESC, s.project DESC LIMIT ?",
        [*where.params, limit + 1],
    )
    rows = dicts(cur)
    next_key = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_key = SpanKey(last["start_time"], last["trace_id"], last["span_id"], last["project"])
    return SpansPage(rows=rows, next_key=next_key)
