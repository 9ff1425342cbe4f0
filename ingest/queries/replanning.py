"""Replanning analytics: replans by granularity and cause, breaker/gate trips, plan versions per run,
and what replanning cost (the replanner's LLM calls, the re-execution a global replan throws away).

Everything reads `plan_spans` (one row per plan/replan span, kept up to date at load time by
ingest/store/plan_load.py) and the runs table, never the spans table or attributes JSON. The common
filters are facts of the run, so plan_spans rows are scoped through the filtered runs
(ingest/queries/run_scope.py), like every other analytics table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where
from ingest.queries.run_scope import scoped_from
from tracer.conventions import OperationClass as Op
from tracer.conventions import ReplanVerdict, StopReason

# Candidates per row; the API keeps the first few distinct ones (ingest/api/examples.py).
CANDIDATES = 10
TOP_RUNS = 20
RECENT_REPLANS = 50

_PLAN, _REPLAN = Op.PLAN.value, Op.REPLAN.value
_ADMITTED = ReplanVerdict.ADMITTED.value
# Column names only ever come from here; user values only ever become parameters.
_GROUP_COLUMNS = {"granularity": "p.granularity", "cause": "p.cause"}
_REFUSED = "p.verdict IS NOT NULL AND p.verdict <> ?"


@dataclass(frozen=True)
class ReplanningRows:
    totals: dict[str, Any]
    by_granularity: list[dict[str, Any]]
    by_cause: list[dict[str, Any]]
    trips: list[dict[str, Any]]
    exhausted: dict[str, Any]
    versions: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    routes: list[dict[str, Any]]
    steps: dict[str, Any]
    recent: list[dict[str, Any]]


def _plan_spans(filters: CommonFilters) -> tuple[str, list[object]]:
    """`FROM (plan_spans in scope) p`: a subquery, so callers append their own WHERE whatever shape
    run_scope's clause has."""
    source, params = scoped_from("plan_spans", "p", filters)
    return f"FROM (SELECT p.* {source}) p", params


def _dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _groups(cur: duckdb.DuckDBPyConnection, filters: CommonFilters, by: Literal["granularity", "cause"]) -> list[dict]:
    """Replan spans (every attempt, whatever its verdict) per granularity or cause."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT {_GROUP_COLUMNS[by]} AS key, count(*) AS replans,
            count(*) FILTER (WHERE p.verdict = ?) AS admitted,
            count(*) FILTER (WHERE {_REFUSED}) AS refused,
            count(*) FILTER (WHERE p.verdict IS NULL) AS unusable,
            count(DISTINCT (p.project, p.trace_id)) AS runs,
            sum(p.llm_calls) AS llm_calls, sum(p.input_tokens) AS input_tokens, sum(p.output_tokens) AS output_tokens,
            coalesce(sum(p.llm_cost_usd), 0) AS llm_cost_usd,
            coalesce(sum(p.reexecution_cost_usd) FILTER (WHERE p.verdict = ?), 0) AS reexecution_cost_usd,
            max_by(p.trace_id, p.start_time, {CANDIDATES}) AS examples
        {source} WHERE p.operation = ?
        GROUP BY key ORDER BY replans DESC, key NULLS LAST
        """,
        [_ADMITTED, _ADMITTED, _ADMITTED, *params, _REPLAN],
    )
    return _dicts(cur)


def _trips(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[dict[str, Any]]:
    """Replans a breaker or gate refused (the oscillation guard included), per verdict."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.verdict, count(*) AS trips, count(DISTINCT (p.project, p.trace_id)) AS runs,
            max_by(p.trace_id, p.start_time, {CANDIDATES}) AS examples
        {source} WHERE p.operation = ? AND {_REFUSED}
        GROUP BY p.verdict ORDER BY trips DESC, p.verdict
        """,
        [*params, _REPLAN, _ADMITTED],
    )
    return _dicts(cur)


def _exhausted(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> dict[str, Any]:
    """Runs that ended `replan_exhausted`; those without a refused replan span tripped a breaker before
    any replan call (e.g. the same environmental failure repeating past the step breaker)."""
    where = runs_common_where(filters)
    where.add("stop_reason = ?", StopReason.REPLAN_EXHAUSTED.value)
    cur.execute(
        f"""
        WITH ex AS (SELECT project, trace_id, start_time FROM runs WHERE {where.sql()}),
        refused AS (
            SELECT DISTINCT p.project, p.trace_id FROM plan_spans p
            WHERE p.operation = ? AND {_REFUSED} AND p.trace_id IN (SELECT trace_id FROM ex)
        )
        SELECT count(*) AS runs, max_by(ex.trace_id, ex.start_time, {CANDIDATES}) AS examples,
            count(*) FILTER (WHERE refused.trace_id IS NULL) AS without_replan_span,
            max_by(ex.trace_id, ex.start_time, {CANDIDATES}) FILTER (WHERE refused.trace_id IS NULL)
                AS without_replan_span_examples
        FROM ex LEFT JOIN refused ON refused.project = ex.project AND refused.trace_id = ex.trace_id
        """,
        [*where.params, _REPLAN, _ADMITTED],
    )
    return _dicts(cur)[0]


def _per_run(filters: CommonFilters) -> tuple[str, list[object]]:
    """A CTE `per_run`: one row per plan-and-execute run in scope with its versions and replan costs.

    Versions: the highest plan version a run adopted (the first plan, then each admitted replan);
    0 when no usable plan came back at all.
    """
    source, params = _plan_spans(filters)
    sql = f"""
        per_run AS (
            SELECT p.project, p.trace_id, max(p.start_time) AS last_at,
                coalesce(max(coalesce(p.to_version, p.plan_version))
                    FILTER (WHERE p.operation = ? OR p.verdict = ?), 0) AS versions,
                count(*) FILTER (WHERE p.operation = ?) AS replans,
                coalesce(sum(p.llm_calls) FILTER (WHERE p.operation = ?), 0) AS replan_llm_calls,
                coalesce(sum(p.input_tokens) FILTER (WHERE p.operation = ?), 0) AS replan_input_tokens,
                coalesce(sum(p.output_tokens) FILTER (WHERE p.operation = ?), 0) AS replan_output_tokens,
                coalesce(sum(p.llm_cost_usd) FILTER (WHERE p.operation = ?), 0) AS replan_cost_usd,
                coalesce(sum(p.llm_cost_usd) FILTER (WHERE p.operation = ?), 0) AS plan_cost_usd,
                coalesce(sum(p.reexecution_cost_usd) FILTER (WHERE p.operation = ? AND p.verdict = ?), 0)
                    AS reexecution_cost_usd
            {source}
            GROUP BY p.project, p.trace_id
        )"""
    head = [_PLAN, _ADMITTED, _REPLAN, _REPLAN, _REPLAN, _REPLAN, _REPLAN, _PLAN, _REPLAN, _ADMITTED]
    return sql, [*head, *params]


def _versions_and_totals(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    per_run, params = _per_run(filters)
    cur.execute(
        f"""
        WITH {per_run}
        SELECT versions, count(*) AS runs, max_by(trace_id, last_at, {CANDIDATES}) AS examples
        FROM per_run GROUP BY versions ORDER BY versions
        """,
        params,
    )
    versions = _dicts(cur)
    cur.execute(
        f"""
        WITH {per_run}
        SELECT count(*) AS plan_runs, count(*) FILTER (WHERE pr.replans > 0) AS runs_with_replans,
            coalesce(sum(pr.replan_llm_calls), 0) AS replan_llm_calls,
            coalesce(sum(pr.replan_input_tokens), 0) AS replan_input_tokens,
            coalesce(sum(pr.replan_output_tokens), 0) AS replan_output_tokens,
            coalesce(sum(pr.replan_cost_usd), 0) AS replan_cost_usd,
            coalesce(sum(pr.plan_cost_usd), 0) AS plan_cost_usd,
            coalesce(sum(pr.reexecution_cost_usd), 0) AS reexecution_cost_usd,
            coalesce(sum(r.cost_usd), 0) AS runs_cost_usd,
            max_by(pr.trace_id, pr.replan_cost_usd + pr.reexecution_cost_usd, {CANDIDATES})
                FILTER (WHERE pr.replans > 0) AS examples
        FROM per_run pr LEFT JOIN runs r ON r.project = pr.project AND r.trace_id = pr.trace_id
        """,
        params,
    )
    totals = _dicts(cur)[0]
    cur.execute(
        f"""
        WITH {per_run}
        SELECT pr.trace_id, pr.project, r.agent, r.version, r.ok, r.stop_reason, r.start_time, pr.versions,
            pr.replans, pr.replan_cost_usd, pr.reexecution_cost_usd, r.cost_usd AS run_cost_usd
        FROM per_run pr LEFT JOIN runs r ON r.project = pr.project AND r.trace_id = pr.trace_id
        WHERE pr.replans > 0
        ORDER BY pr.replan_cost_usd + pr.reexecution_cost_usd DESC, pr.replans DESC, pr.last_at DESC, pr.trace_id
        LIMIT {TOP_RUNS}
        """,
        params,
    )
    return totals, versions, _dicts(cur)


def _routes(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[dict[str, Any]]:
    """The router's decisions: replan spans per (rule's granularity, granularity used), with how many
    were escalated above the rule and how many followed a goal change's escalation reset."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.route_rule AS rule, p.granularity, count(*) AS replans,
            count(*) FILTER (WHERE p.route_escalated) AS escalated,
            count(*) FILTER (WHERE p.escalation_reset) AS escalation_resets,
            max_by(p.trace_id, p.start_time, {CANDIDATES}) AS examples
        {source} WHERE p.operation = ?
        GROUP BY p.route_rule, p.granularity ORDER BY replans DESC, rule NULLS LAST, p.granularity
        """,
        [*params, _REPLAN],
    )
    return _dicts(cur)


def _steps(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> dict[str, Any]:
    """Steps admitted replans kept, dropped and added, and the results they found stale or void."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT coalesce(sum(len(p.kept)), 0) AS kept, coalesce(sum(len(p.dropped)), 0) AS dropped,
            coalesce(sum(len(p.added)), 0) AS added,
            coalesce(sum(p.variables_stale), 0) AS stale_results, coalesce(sum(p.variables_void), 0) AS void_results
        {source} WHERE p.operation = ? AND p.verdict = ?
        """,
        [*params, _REPLAN, _ADMITTED],
    )
    return _dicts(cur)[0]


def _recent(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[dict[str, Any]]:
    """The newest replan spans with what the replanner was given and what it changed."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.trace_id, p.project, p.start_time, r.agent, r.version, p.from_version, p.to_version,
            p.granularity, p.route_rule, p.route_escalated, p.escalation_reset, p.cause, p.failed_step,
            p.verdict, p.refusal, p.kept, p.dropped, p.added, p.lessons, p.variables_clean, p.variables_stale,
            p.variables_void, p.tool_calls, p.budget_used_tokens
        {source} LEFT JOIN runs r ON r.project = p.project AND r.trace_id = p.trace_id
        WHERE p.operation = ?
        ORDER BY p.start_time DESC, p.span_id
        LIMIT {RECENT_REPLANS}
        """,
        [*params, _REPLAN],
    )
    return _dicts(cur)


def replanning_rows(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> ReplanningRows:
    """Every figure of `GET /api/replanning` for the runs the filters select."""
    totals, versions, runs = _versions_and_totals(cur, filters)
    return ReplanningRows(
        totals=totals,
        by_granularity=_groups(cur, filters, "granularity"),
        by_cause=_groups(cur, filters, "cause"),
        trips=_trips(cur, filters),
        exhausted=_exhausted(cur, filters),
        versions=versions,
        runs=runs,
        routes=_routes(cur, filters),
        steps=_steps(cur, filters),
        recent=_recent(cur, filters),
    )
