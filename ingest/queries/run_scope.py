"""Restricting a per-call table (tool_calls, tool_carry, run_models) to the runs a filter selects.

Why filter through runs: the common filters (agent, version, environment, time range) are facts of
the run, kept on the runs row as late spans arrive; the derived tables carry only the run's key.
A SEMI JOIN with the filtered runs keeps one definition of "the runs in scope" for every endpoint.

Why also a start-time bound on the derived table: its rows are in time order, and a span of a run
starts after the run does, so `start_time >= since - CHILD_SLACK` lets DuckDB skip every row group
older than the range by its zone maps before the join. The slack covers clock skew between the
processes of one trace; the SEMI JOIN stays the exact filter.
"""

from __future__ import annotations

from datetime import timedelta

from ingest.queries.filters import CommonFilters, Where, runs_common_where

CHILD_SLACK = timedelta(hours=1)


def scoped_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """`FROM <table> <alias> [SEMI JOIN (filtered runs) ON ...] WHERE ...` and its parameters.

    `table` and `alias` are module constants of the callers, never user input; `table` must have a
    `start_time` column. Without any filter the join is skipped: every row is in scope.
    """
    where: Where = runs_common_where(filters)
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
