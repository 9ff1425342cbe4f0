"""ClickHouse form of `ingest.queries.run_scope`: restricting a per-call table to the runs a filter
selects, with the same meaning as DuckDB's. The derived tables are read `FINAL` (the latest
revision of each trace's rows, tombstones hidden), runs too.
"""

from __future__ import annotations

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause
from ingest.queries.run_scope import CHILD_SLACK
from ingest.store.clickhouse.queries._common import RUNS, runs_common_where

__all__ = ["CHILD_SLACK", "facts_from", "scoped_from"]


def scoped_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """For a table WITHOUT the run facts: `FROM <table> AS <alias> FINAL [LEFT SEMI JOIN (filtered
    runs) ON ...] WHERE ...` and its parameters. `table`/`alias` are callers' constants."""
    where: Where = runs_common_where(filters, only_runs=False)
    if not where.clauses:
        return f"FROM {table} AS {alias} FINAL WHERE TRUE", []
    bound: list[object] = []
    prune = "TRUE"
    if filters.since is not None:
        prune = f"{alias}.start_time >= ?"
        bound.append(filters.since - CHILD_SLACK)
    sql = (
        f"FROM {table} AS {alias} FINAL LEFT SEMI JOIN (SELECT project, trace_id FROM {RUNS} WHERE {where.sql()}) AS r "
        f"ON {alias}.project = r.project AND {alias}.trace_id = r.trace_id WHERE {prune}"
    )
    return sql, [*where.params, *bound]


def facts_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """For a table WITH the run facts (tool_calls, tool_carry, run_models): `FROM <table> AS
    <alias> FINAL WHERE ...` selecting the rows of the runs in scope, and its parameters."""
    where = Where()
    project_clause(where, filters.projects, column=f"{alias}.project")
    if filters.since is not None:
        where.add(f"{alias}.start_time >= ?", filters.since - CHILD_SLACK)
        where.add(f"{alias}.run_start >= ?", filters.since)
    if filters.until is not None:
        where.add(f"{alias}.run_start < ?", filters.until)
    if filters.agent is not None:
        where.add(f"{alias}.agent = ?", filters.agent)
    if filters.version is not None:
        where.add(f"{alias}.version = ?", filters.version)
    if filters.environment is not None:
        where.add(f"{alias}.environment = ?", filters.environment)
    mode_clause(where, filters.modes, column=f"{alias}.mode")
    return f"FROM {table} AS {alias} FINAL WHERE {where.sql()}", list(where.params)
