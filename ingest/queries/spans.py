"""Listing spans (`GET /api/spans`): a filter expression, a time range, keyset pages newest first.

The page boundary is the last row's (start_time, trace_id, span_id, project), so paging never skips
or repeats a span while new ones arrive, and the `start_time` bound lets DuckDB's zone maps skip every
row group outside the range.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.filters.compile import Sql
from ingest.queries.filters import Where, project_clause

SPAN_COLUMNS = (
    "project", "trace_id", "span_id", "parent_span_id", "name", "kind", "operation", "start_time", "end_time",
    "duration_ms", "status", "status_message", "service", "agent_name", "agent_version", "model", "provider",
    "input_tokens", "output_tokens", "cost_usd", "tool_name", "error_type", "attributes",
)  # fmt: skip
SPAN_SELECT = ", ".join(f"s.{c}" for c in SPAN_COLUMNS)


@dataclass(frozen=True)
class SpanKey:
    start_time: datetime
    trace_id: str
    span_id: str
    project: str


@dataclass(frozen=True)
class SpansPage:
    rows: list[dict[str, Any]]
    next_key: SpanKey | None


def list_spans(
    cur: duckdb.DuckDBPyConnection,
    projects: frozenset[str] | None,
    since: datetime | None,
    until: datetime | None,
    predicate: Sql | None,
    limit: int = 50,
    after: SpanKey | None = None,
) -> SpansPage:
    """One page of spans matching `predicate` (over alias `s`), newest first; `next_key` only when more exist."""
    where = Where()
    project_clause(where, projects, column="s.project")
    if since is not None:
        where.add("s.start_time >= ?", since)
    if until is not None:
        where.add("s.start_time < ?", until)
    if predicate is not None:
        where.add(predicate.sql, *predicate.params)
    if after is not None:
        where.add("s.start_time <= ?", after.start_time)  # a bare bound first: zone maps prune by it
        where.add(
            "(s.start_time, s.trace_id, s.span_id, s.project) < (?, ?, ?, ?)",
            after.start_time, after.trace_id, after.span_id, after.project,
        )
    cur.execute(
        f"SELECT {SPAN_SELECT} FROM spans s WHERE {where.sql()} "
        "ORDER BY s.start_time DESC, s.trace_id DESC, s.span_id DESC, s.project DESC LIMIT ?",
        [*where.params, limit + 1],
    )
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    next_key = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_key = SpanKey(last["start_time"], last["trace_id"], last["span_id"], last["project"])
    return SpansPage(rows=rows, next_key=next_key)
