"""ClickHouse form of `ingest.queries.runs`: listing runs with filters, sorting and keyset paging,
and finding a trace's run rows.

Same keyset as DuckDB's ((sort key, trace_id, project), NULLs coalesced to a sentinel below every
real value), so a cursor means the same page on both stores. Runs are read `FINAL`: the latest
revision of each (project, trace_id), so a run rewritten by late spans is listed once. A trace is
found by the ordering key (project, trace_id) directly; ClickHouse needs no trace_index.
"""

from __future__ import annotations

from typing import Any

from ingest.errors import NotAvailable
from ingest.filters.compile import Sql
from ingest.queries.filters import Where, project_clause
from ingest.queries.runs import (
    RUN_COLUMNS,
    RUN_SELECT,
    RunFilters,
    RunKey,
    RunsPage,
    SortField,
    SortOrder,
    add_run_filters,
)
from ingest.store.clickhouse.queries._common import RUNS, dicts, runs_common_where

__all__ = ["RUN_COLUMNS", "RunFilters", "RunKey", "RunsPage", "find_runs_by_trace", "list_runs", "runs_where"]

SORT_EXPRESSIONS: dict[str, str] = {
    "start_time": "ifNull(start_time, toDateTime64('1970-01-01 00:00:00', 6, 'UTC'))",
    "duration_ms": "ifNull(duration_ms, -1.0)",
    "cost_usd": "ifNull(cost_usd, -1.0)",
    "steps": "toInt64(ifNull(steps, -1))",
    "input_tokens": "ifNull(input_tokens, -1)",
}


def runs_where(f: RunFilters) -> Where:
    # ClickHouse's LIKE escapes with a backslash by default (no ESCAPE clause)
    return add_run_filters(runs_common_where(f), f, has_model="has(models, ?)",
                           name_or_agent_like="name ILIKE ? OR agent ILIKE ?")


def list_runs(
    cur: Any,
    filters: RunFilters,
    sort: SortField = "start_time",
    order: SortOrder = "desc",
    limit: int = 50,
    after: RunKey | None = None,
    extra: Sql | None = None,
) -> RunsPage:
    """One page of runs; `next_key` is set only when at least one more row exists."""
    if sort not in SORT_EXPRESSIONS:
        raise ValueError(f"unknown sort field {sort!r}")
    if extra is not None and getattr(extra, "dialect", "duckdb") != "clickhouse":
        raise NotAvailable("filter expressions on runs are not available on the clickhouse store yet; "
                           "use the plain query parameters or store=duckdb")
    key = SORT_EXPRESSIONS[sort]
    cmp = "<" if order == "desc" else ">"
    direction = "DESC" if order == "desc" else "ASC"
    where = runs_where(filters)
    if extra is not None:
        where.add(extra.sql, *extra.params)
    if after is not None:
        where.add(
            f"{key} {cmp} ? OR ({key} = ? AND (trace_id {cmp} ? OR (trace_id = ? AND project {cmp} ?)))",
            after.value, after.value, after.trace_id, after.trace_id, after.project,
        )
    sql = (
        f"SELECT {RUN_SELECT}, {key} AS _sort_key FROM {RUNS} WHERE {where.sql()} "
        f"ORDER BY _sort_key {direction}, trace_id {direction}, project {direction} LIMIT ?"
    )
    cur.execute(sql, [*where.params, limit + 1])
    rows = dicts(cur)
    next_key = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_key = RunKey(value=last["_sort_key"], trace_id=last["trace_id"], project=last["project"])
    for r in rows:
        r.pop("_sort_key", None)
    return RunsPage(rows=rows, next_key=next_key)


def find_runs_by_trace(cur: Any, trace_id: str, projects: frozenset[str] | None) -> list[dict]:
    """Run rows of one trace id among readable projects, with `span_start` / `span_end` (the
    root's start/end when the store has none), ordered by project as in DuckDB."""
    where = Where()
    where.add("trace_id = ?", trace_id)
    project_clause(where, projects)
    cur.execute(
        f"SELECT {RUN_SELECT}, coalesce(span_start, start_time) AS span_start, coalesce(span_end, end_time) AS span_end "
        f"FROM {RUNS} WHERE {where.sql()} ORDER BY project",
        where.params,
    )
    return dicts(cur)
