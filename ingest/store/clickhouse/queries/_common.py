"""The filters shared by this backend's queries: DuckDB's WHERE builder with ClickHouse spellings.

Why reuse `ingest.queries.filters`: the clauses (project IN, mode, time range, agent) are plain SQL
both engines read alike; only `IS NOT FALSE` has no ClickHouse form, so `runs_common_where` is
redefined here and everything else is imported. Table sources name `FINAL` once, here.
"""

from __future__ import annotations

from typing import Any

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause

# Latest version of each row of the ReplacingMergeTree tables (WHERE runs after the merge).
RUNS = "runs FINAL"
SPANS = "spans FINAL"
SCORES = "scores FINAL"
LOG_RECORDS = "log_records FINAL"


def runs_common_where(f: CommonFilters, only_runs: bool = True) -> Where:
    """ClickHouse form of `ingest.queries.filters.runs_common_where` (same meaning, same order)."""
    where = Where()
    project_clause(where, f.projects)
    if only_runs:
        where.add("ifNull(is_run, true)")
    if f.since is not None:
        where.add("start_time >= ?", f.since)
    if f.until is not None:
        where.add("start_time < ?", f.until)
    if f.agent is not None:
        where.add("agent = ?", f.agent)
    if f.version is not None:
        where.add("version = ?", f.version)
    if f.environment is not None:
        where.add("environment = ?", f.environment)
    mode_clause(where, f.modes)
    return where


def dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def null_if_empty(expr: str, column: str) -> str:
    """`expr` (an aggregate over `column`), NULL when no row has a value: DuckDB's avg/quantile of
    nothing is NULL where ClickHouse's is nan."""
    return f"if(count({column}) = 0, NULL, {expr})"
