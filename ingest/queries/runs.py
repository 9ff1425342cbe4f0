"""Listing runs with filters, sorting and keyset paging.

Keyset (not OFFSET) paging: a page boundary is the last row's (sort key, trace_id, project), so a
run inserted while someone pages never shifts later pages and deep pages cost the same as the
first. NULL sort values are coalesced to a sentinel below every real value so that the key is
total and the boundary comparison never skips rows with missing metrics.

Why a page is read in two steps (ingest/queries/runs_window.py): sorting by the coalesced key and
the tie-breakers made DuckDB read every column of every run to keep the top N (75 ms at 287,000
runs); the bare column's top N is a single-key Top-N that zone maps and DuckDB's dynamic filter
answer from a row group or two, and its last value bounds the page to a window the full statement
then reads (a few ms). The answer is the same rows in the same order; when the window cannot
prove that (a NULL or sentinel-valued key within the page) the full statement runs as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import duckdb

from ingest.filters.compile import Sql
from ingest.queries.filters import CommonFilters, Where, like_contains, project_clause, runs_common_where
from ingest.queries.runs_window import SortKey, read_page
from ingest.schema import trace_key_sql

SortField = Literal["start_time", "duration_ms", "cost_usd", "steps", "input_tokens"]
SortOrder = Literal["asc", "desc"]

# Sort keys: the column and the sentinel its NULLs sort as, below every real value (metrics are never
# negative, spans never start before 1970).
SORT_KEYS: dict[str, SortKey] = {
    "start_time": SortKey("start_time", "TIMESTAMP '1970-01-01 00:00:00'", datetime(1970, 1, 1)),
    "duration_ms": SortKey("duration_ms", "-1.0", -1.0),
    "cost_usd": SortKey("cost_usd", "-1.0", -1.0),
    "steps": SortKey("steps", "-1", -1),
    "input_tokens": SortKey("input_tokens", "-1", -1),
}
SORT_EXPRESSIONS: dict[str, str] = {name: key.expression for name, key in SORT_KEYS.items()}

RUN_COLUMNS = (
    "trace_id",
    "project",
    "agent",
    "version",
    "ok",
    "stop_reason",
    "steps",
    "llm_calls",
    "tool_calls",
    "tool_errors",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "models",
    "start_time",
    "end_time",
    "duration_ms",
    "name",
    "service",
    "environment",
    "user_id",
    "conversation_id",
    "mode",
    "span_count",
    "error_spans",
    "failure_signature",
    "root_span_id",
    "stop_reason_source",
    "failure_evidence",
    "agents",
    "handoff_reason",
    "handoff_target",
    "task_id",
    "release_name",
    "release_cohort",
    "release_primary_trace_id",
)
RUN_SELECT = ", ".join(RUN_COLUMNS)


@dataclass(frozen=True)
class RunFilters(CommonFilters):
    """Filters of `GET /api/runs` on top of the common ones."""

    ok: bool | None = None
    stop_reason: str | None = None
    model: str | None = None
    user: str | None = None
    conversation: str | None = None
    min_cost: float | None = None
    min_steps: int | None = None
    q: str | None = None
    eval_run_id: str | None = None
    eval_case_id: str | None = None
    task_id: str | None = None
    release: str | None = None
    cohort: str | None = None


@dataclass(frozen=True)
class RunKey:
    """Position of a row in the sorted listing: the page boundary a cursor carries."""

    value: datetime | float | int
    trace_id: str
    project: str


@dataclass(frozen=True)
class RunsPage:
    rows: list[dict[str, Any]]
    next_key: RunKey | None


def runs_where(f: RunFilters) -> Where:
    return add_run_filters(
        runs_common_where(f), f, has_model="list_contains(models, ?)",
        name_or_agent_like="name ILIKE ? ESCAPE '\\' OR agent ILIKE ? ESCAPE '\\'",
    )


def add_run_filters(where: Where, f: RunFilters, *, has_model: str, name_or_agent_like: str) -> Where:
    """The per-run filters of `/api/runs`, in plain SQL every store reads alike; the two clauses
    whose spelling differs come from the store (`has_model`, `name_or_agent_like`). One list for
    both stores, so a filter added here filters on ClickHouse too."""
    if f.ok is not None:
        where.add("ok = ?", f.ok)
    if f.stop_reason is not None:
        where.add("stop_reason = ?", f.stop_reason)
    if f.model is not None:
        where.add(has_model, f.model)
    if f.user is not None:
        where.add("user_id = ?", f.user)
    if f.conversation is not None:
        where.add("conversation_id = ?", f.conversation)
    if f.min_cost is not None:
        where.add("cost_usd >= ?", f.min_cost)
    if f.min_steps is not None:
        where.add("steps >= ?", f.min_steps)
    if f.eval_run_id is not None:
        where.add("eval_run_id = ?", f.eval_run_id)
    if f.eval_case_id is not None:
        where.add("eval_case_id = ?", f.eval_case_id)
    if f.task_id is not None:
        where.add("task_id = ?", f.task_id)
    if f.release is not None:
        where.add("release_name = ?", f.release)
    if f.cohort is not None:
        where.add("release_cohort = ?", f.cohort)
    if f.q:
        pattern = like_contains(f.q)
        where.add(name_or_agent_like, pattern, pattern)
    return where


def list_runs(
    cur: duckdb.DuckDBPyConnection,
    filters: RunFilters,
    sort: SortField = "start_time",
    order: SortOrder = "desc",
    limit: int = 50,
    after: RunKey | None = None,
    extra: Sql | None = None,
) -> RunsPage:
    """One page of runs; `next_key` is set only when at least one more row exists. `extra` is a compiled
    filter expression over `runs` (ingest/filters), ANDed with the rest."""
    if sort not in SORT_EXPRESSIONS:  # typed callers cannot get here; guard the SQL anyway
        raise ValueError(f"unknown sort field {sort!r}")
    key = SORT_EXPRESSIONS[sort]
    cmp = "<" if order == "desc" else ">"
    where = runs_where(filters)
    if extra is not None:
        where.add(extra.sql, *extra.params)
    if after is not None:
        where.add(
            f"{key} {cmp} ? OR ({key} = ? AND (trace_id {cmp} ? OR (trace_id = ? AND project {cmp} ?)))",
            after.value,
            after.value,
            after.trace_id,
            after.trace_id,
            after.project,
        )
    rows = read_page(cur, RUN_SELECT, SORT_KEYS[sort], order, where, limit + 1, window=extra is None)
    next_key = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_key = RunKey(value=last["_sort_key"], trace_id=last["trace_id"], project=last["project"])
    for r in rows:
        r.pop("_sort_key", None)
    return RunsPage(rows=rows, next_key=next_key)


def find_runs_by_trace(cur: duckdb.DuckDBPyConnection, trace_id: str, projects: frozenset[str] | None) -> list[dict]:
    """Run rows of one trace id among readable projects (normally zero or one), with `span_start` /
    `span_end`: the extent of all the trace's spans (the root's start/end when the store has none).

    Why two steps: `trace_index` (ingest/schema.py) finds the trace by an integer key and says when it
    started, and that bound lets the runs table's zone maps skip all but a segment or two, where a bare
    `trace_id = ?` compared the 32-char id of every run. A trace the index does not know (a row lost
    to retention skew, a store written before it existed and not migrated) falls back to that scan.
    """
    index = Where()
    index.add(f"trace_key = {trace_key_sql('?')}", trace_id)
    index.add("trace_id = ?", trace_id)
    project_clause(index, projects)
    starts = [r[0] for r in cur.execute(f"SELECT start_time FROM trace_index WHERE {index.sql()}", index.params).fetchall()]
    if starts:
        where = Where()
        where.add("span_start <= ?", max(starts))  # bare columns: zone maps only prune those
        where.add("span_end >= ?", min(starts))
        where.add("trace_id = ?", trace_id)
        project_clause(where, projects)
        rows = _runs_where(cur, where)
        if len(rows) >= len(starts):
            return rows
    where = Where()
    where.add("trace_id = ?", trace_id)
    project_clause(where, projects)
    return _runs_where(cur, where)


def _runs_where(cur: duckdb.DuckDBPyConnection, where: Where) -> list[dict]:
    cur.execute(
        f"SELECT {RUN_SELECT}, coalesce(span_start, start_time) AS span_start, coalesce(span_end, end_time) AS span_end "
        f"FROM runs WHERE {where.sql()} ORDER BY project",
        where.params,
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
