"""Restricting a per-call table (tool_calls, tool_carry, run_models) to the runs a filter selects.

Why filter through runs: the common filters (agent, version, environment, time range) are facts of
the run, kept on the runs row as late spans arrive; the derived tables carry only the run's key.
A SEMI JOIN with the filtered runs keeps one definition of "the runs in scope" for every endpoint.
"""

from __future__ import annotations

from ingest.queries.filters import CommonFilters, Where, runs_common_where


def scoped_from(table: str, alias: str, filters: CommonFilters) -> tuple[str, list[object]]:
    """`FROM <table> <alias> [SEMI JOIN (filtered runs)]` and its parameters.

    `table` and `alias` are module constants of the callers, never user input. Without any
    filter the join is skipped: every row is in scope.
    """
    where: Where = runs_common_where(filters)
    if not where.clauses:
        return f"FROM {table} {alias}", []
    sql = (
        f"FROM {table} {alias} SEMI JOIN (SELECT project, trace_id FROM runs WHERE {where.sql()}) r "
        f"ON {alias}.project = r.project AND {alias}.trace_id = r.trace_id"
    )
    return sql, list(where.params)
