"""Restricting a per-call table (tool_calls, tool_carry, run_models) to the runs a filter selects.

The common filters (agent, version, environment, time range) are facts of the run. For tables
without them (plan_spans), `scoped_from` joins the filtered runs. For the analytics tables the loader
copies them onto every analytics row of the run (`run_start`, `agent`, `version`, `environment`, `mode`,
kept in step as late spans arrive), so these tables are filtered directly, with the same meaning
as `runs_common_where` on the runs table: a join with runs on 32-character trace ids cost more
than the aggregate itself at millions of rows.

Why also a bound on the row's own `start_time`: rows are stored in time order and a span of a run
starts after the run does, so `start_time >= since - CHILD_SLACK` lets DuckDB skip every older row
group by its zone maps. The slack covers clock skew between the processes of one trace; the
`run_start` condition stays the exact filter.
"""

from __future__ import annotations

from datetime import timedelta

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause, runs_common_where

CHILD_SLACK = timedelta(hours=1)


def scoped_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """For a table WITHOUT the run facts: `FROM <table> <alias> [SEMI JOIN (filtered runs) ON ...]
    WHERE ...` and its parameters (used by ingest/queries/replanning.py on plan_spans).

    `table` and `alias` are module constants of the callers, never user input; `table` must have a
    `start_time` column. Without any filter the join is skipped: every row is in scope.
    """
    where: Where = runs_common_where(filters, only_runs=False)
    if not where.clauses:
        return f"FROM {table} {alias} WHERE TRUE", []
    bound: list[object] = []
    prune = "TRUE"
    if filters.since is not None:
        prune = f"{alias}.start_time >= ?"
        bound.append(filters.since - CHILD_SLACK)
    sql = (
        f"FROM {table} {alias} SEMI JOIN (SELECT project, trace_id FROM runs WHERE {where.sql()}) r "
        f"ON {alias}.project = r.project AND {alias}.trace_id = r.trace_id WHERE {prune}"
    )
    return sql, [*where.params, *bound]


def facts_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """For a table WITH the run facts (tool_calls, tool_carry, run_models): `FROM <table> <alias>
    WHERE ...` selecting the rows of the runs in scope, without a join, and its parameters.

    `table` and `alias` are module constants of the callers, never user input.
    """
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
    return f"FROM {table} {alias} WHERE {where.sql()}", list(where.params)
