"""The spans the agent graph is built from: the newest runs in scope and the spans of each.

Why a sample of runs and not an aggregate table: an edge is "span X's nearest calling agent or tool
is Y", a walk up a tree through spans of any class (steps, framework chains), which SQL can only do
with a recursive join over every span in range. The graph of the newest `max_runs` runs (default
500) is what an engineer looks at; the answer says how many runs it covers and how many matched.
The tree walk itself is ingest/api/graph_build.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from ingest.filters.compile import Sql
from ingest.queries.filters import CommonFilters, runs_common_where
from ingest.queries.traces import WINDOW_SLACK

GRAPH_SPAN_COLUMNS = (
    "trace_id", "span_id", "parent_span_id", "name", "operation", "start_time", "duration_ms", "status",
    "agent_name", "tool_name", "model", "response_model", "error_type", "cost_usd", "input_tokens",
    "output_tokens",
)  # fmt: skip
GRAPH_RUN_COLUMNS = ("project", "trace_id", "agent", "root_span_id", "agents", "start_time")


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def graph_runs(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, max_runs: int, extra: Sql | None = None
) -> tuple[list[dict[str, Any]], int, datetime | None, datetime | None]:
    """(the newest `max_runs` runs in scope, how many runs are in scope, their spans' time extent).
    `extra`: a compiled filter expression over `runs` (ingest/filters), ANDed with the rest."""
    where = runs_common_where(filters)
    if extra is not None:
        where.add(extra.sql, *extra.params)
    cur.execute(
        f"SELECT {', '.join(GRAPH_RUN_COLUMNS)}, coalesce(span_start, start_time) AS lo, "
        f"coalesce(span_end, end_time, start_time) AS hi FROM runs WHERE {where.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id DESC, project DESC LIMIT ?",
        [*where.params, max_runs],
    )
    runs = _rows(cur)
    total = cur.execute(f"SELECT count(*) FROM runs WHERE {where.sql()}", where.params).fetchone()
    los = [r["lo"] for r in runs if r["lo"] is not None]
    his = [r["hi"] for r in runs if r["hi"] is not None]
    return runs, int(total[0]) if total else 0, min(los) if los else None, max(his) if his else None


def graph_spans(
    cur: duckdb.DuckDBPyConnection, runs: list[dict[str, Any]], lo: datetime | None, hi: datetime | None
) -> list[dict[str, Any]]:
    """The spans of `runs` (rows of `graph_runs`), keyed by their run's project and trace id."""
    if not runs or lo is None or hi is None:
        return []
    cur.execute(
        f"""
        SELECT s.project, {', '.join('s.' + c for c in GRAPH_SPAN_COLUMNS)}
        FROM spans s SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS project, unnest(?::VARCHAR[]) AS trace_id) t
            ON s.project = t.project AND s.trace_id = t.trace_id
        WHERE s.start_time >= ? AND s.start_time <= ?
        """,
        [[r["project"] for r in runs], [r["trace_id"] for r in runs], lo - WINDOW_SLACK, hi + WINDOW_SLACK],
    )
    return _rows(cur)
