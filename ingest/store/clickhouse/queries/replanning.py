"""ClickHouse form of `ingest.queries.replanning`: replans by granularity and cause, breaker/gate
trips, plan versions per run, and what replanning cost.

Same reads as DuckDB's: `plan_spans` (derived per trace, read FINAL: the latest revision, tombstones
hidden) scoped through the filtered runs, and `runs`. Spellings: `countIf`/`sumIf`/`maxIf` for
FILTER, `uniqExact(project, trace_id)` for count(DISTINCT (...)), and DuckDB's `max_by(x, key, N)` as
the N values of the largest keys (`_top`). LEFT JOINs run with `join_use_nulls = 1` so a missing
run is NULL, as in DuckDB, not a default value.
"""

from __future__ import annotations

from typing import Any, Literal

from ingest.queries.filters import CommonFilters
from ingest.queries.replanning import CANDIDATES, RECENT_REPLANS, TOP_RUNS, ReplanningRows
from ingest.store.clickhouse.queries._common import RUNS, dicts, runs_common_where
from ingest.store.clickhouse.queries.run_scope import scoped_from
from tracer.conventions import OperationClass as Op
from tracer.conventions import ReplanVerdict, StopReason

__all__ = ["CANDIDATES", "TOP_RUNS", "ReplanningRows", "replanning_rows"]

_PLAN, _REPLAN = Op.PLAN.value, Op.REPLAN.value
_ADMITTED = ReplanVerdict.ADMITTED.value
# Column names only ever come from here; user values only ever become parameters.
_GROUP_COLUMNS = {"granularity": "p.granularity", "cause": "p.cause"}
_REFUSED = "ifNull(p.verdict IS NOT NULL AND p.verdict <> ?, false)"
_NULLS = " SETTINGS join_use_nulls = 1"


def _top(value: str, key: str, condition: str | None = None) -> str:
    """DuckDB's `max_by(value, key, CANDIDATES)` [FILTER (WHERE condition)]: the values of the
    CANDIDATES largest keys, largest first ([] where DuckDB has NULL: no row; the API reads both as none)."""
    pairs = f"groupArrayIf(({key}, {value}), {condition})" if condition else f"groupArray(({key}, {value}))"
    return f"arrayMap(t -> t.2, arraySlice(arrayReverseSort({pairs}), 1, {CANDIDATES}))"


def _plan_spans(filters: CommonFilters) -> tuple[str, list[object]]:
    source, params = scoped_from("plan_spans", "p", filters)
    return f"FROM (SELECT p.* {source}) AS p", params


def _groups(cur: Any, filters: CommonFilters, by: Literal["granularity", "cause"]) -> list[dict]:
    """Replan spans (every attempt, whatever its verdict) per granularity or cause."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT {_GROUP_COLUMNS[by]} AS key, count() AS replans,
            countIf(ifNull(p.verdict = ?, false)) AS admitted,
            countIf({_REFUSED}) AS refused,
            countIf(p.verdict IS NULL) AS unusable,
            uniqExact(p.project, p.trace_id) AS runs,
            sum(p.llm_calls) AS llm_calls, sum(p.input_tokens) AS input_tokens, sum(p.output_tokens) AS output_tokens,
            coalesce(sum(p.llm_cost_usd), 0) AS llm_cost_usd,
            coalesce(sumIf(p.reexecution_cost_usd, ifNull(p.verdict = ?, false)), 0) AS reexecution_cost_usd,
            {_top("p.trace_id", "p.start_time")} AS examples
        {source} WHERE p.operation = ?
        GROUP BY key ORDER BY replans DESC, key ASC NULLS LAST
        """,
        [_ADMITTED, _ADMITTED, _ADMITTED, *params, _REPLAN],
    )
    return dicts(cur)


def _trips(cur: Any, filters: CommonFilters) -> list[dict[str, Any]]:
    """Replans a breaker or gate refused (the oscillation guard included), per verdict."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.verdict AS verdict, count() AS trips, uniqExact(p.project, p.trace_id) AS runs,
            {_top("p.trace_id", "p.start_time")} AS examples
        {source} WHERE p.operation = ? AND {_REFUSED}
        GROUP BY verdict ORDER BY trips DESC, verdict
        """,
        [*params, _REPLAN, _ADMITTED],
    )
    return dicts(cur)


def _exhausted(cur: Any, filters: CommonFilters) -> dict[str, Any]:
    """Runs that ended `replan_exhausted`; those without a refused replan span tripped a breaker before
    any replan call."""
    where = runs_common_where(filters)
    where.add("stop_reason = ?", StopReason.REPLAN_EXHAUSTED.value)
    cur.execute(
        f"""
        WITH ex AS (SELECT project, trace_id, start_time FROM {RUNS} WHERE {where.sql()}),
        refused AS (
            SELECT DISTINCT p.project AS project, p.trace_id AS trace_id, 1 AS hit FROM plan_spans AS p FINAL
            WHERE p.operation = ? AND {_REFUSED} AND p.trace_id IN (SELECT trace_id FROM ex)
        )
        SELECT count() AS runs, {_top("ex.trace_id", "ex.start_time")} AS examples,
            countIf(refused.hit IS NULL) AS without_replan_span,
            {_top("ex.trace_id", "ex.start_time", "refused.hit IS NULL")} AS without_replan_span_examples
        FROM ex LEFT JOIN refused ON refused.project = ex.project AND refused.trace_id = ex.trace_id
        {_NULLS}
        """,
        [*where.params, _REPLAN, _ADMITTED],
    )
    return dicts(cur)[0]


def _per_run(filters: CommonFilters) -> tuple[str, list[object]]:
    """A CTE `per_run`: one row per plan-and-execute run in scope with its versions and replan costs."""
    source, params = _plan_spans(filters)
    sql = f"""
        per_run AS (
            SELECT p.project AS project, p.trace_id AS trace_id, max(p.start_time) AS last_at,
                coalesce(maxIf(coalesce(p.to_version, p.plan_version), p.operation = ? OR ifNull(p.verdict = ?, false)),
                    0) AS versions,
                countIf(p.operation = ?) AS replans,
                coalesce(sumIf(p.llm_calls, p.operation = ?), 0) AS replan_llm_calls,
                coalesce(sumIf(p.input_tokens, p.operation = ?), 0) AS replan_input_tokens,
                coalesce(sumIf(p.output_tokens, p.operation = ?), 0) AS replan_output_tokens,
                coalesce(sumIf(p.llm_cost_usd, p.operation = ?), 0) AS replan_cost_usd,
                coalesce(sumIf(p.llm_cost_usd, p.operation = ?), 0) AS plan_cost_usd,
                coalesce(sumIf(p.reexecution_cost_usd, p.operation = ? AND ifNull(p.verdict = ?, false)), 0)
                    AS reexecution_cost_usd
            {source}
            GROUP BY p.project, p.trace_id
        )"""
    head = [_PLAN, _ADMITTED, _REPLAN, _REPLAN, _REPLAN, _REPLAN, _REPLAN, _PLAN, _REPLAN, _ADMITTED]
    return sql, [*head, *params]


def _versions_and_totals(cur: Any, filters: CommonFilters) -> tuple[dict[str, Any], list[dict], list[dict]]:
    per_run, params = _per_run(filters)
    cur.execute(
        f"""
        WITH {per_run}
        SELECT versions, count() AS runs, {_top("trace_id", "last_at")} AS examples
        FROM per_run GROUP BY versions ORDER BY versions
        """,
        params,
    )
    versions = dicts(cur)
    cur.execute(
        f"""
        WITH {per_run}
        SELECT count() AS plan_runs, countIf(pr.replans > 0) AS runs_with_replans,
            coalesce(sum(pr.replan_llm_calls), 0) AS replan_llm_calls,
            coalesce(sum(pr.replan_input_tokens), 0) AS replan_input_tokens,
            coalesce(sum(pr.replan_output_tokens), 0) AS replan_output_tokens,
            coalesce(sum(pr.replan_cost_usd), 0) AS replan_cost_usd,
            coalesce(sum(pr.plan_cost_usd), 0) AS plan_cost_usd,
            coalesce(sum(pr.reexecution_cost_usd), 0) AS reexecution_cost_usd,
            coalesce(sum(r.cost_usd), 0) AS runs_cost_usd,
            {_top("pr.trace_id", "pr.replan_cost_usd + pr.reexecution_cost_usd", "pr.replans > 0")} AS examples
        FROM per_run AS pr LEFT JOIN runs AS r FINAL ON r.project = pr.project AND r.trace_id = pr.trace_id
        {_NULLS}
        """,
        params,
    )
    totals = dicts(cur)[0]
    cur.execute(
        f"""
        WITH {per_run}
        SELECT pr.trace_id AS trace_id, pr.project AS project, r.agent AS agent, r.version AS version, r.ok AS ok,
            r.stop_reason AS stop_reason, r.start_time AS start_time, pr.versions AS versions,
            pr.replans AS replans, pr.replan_cost_usd AS replan_cost_usd,
            pr.reexecution_cost_usd AS reexecution_cost_usd, r.cost_usd AS run_cost_usd
        FROM per_run AS pr LEFT JOIN runs AS r FINAL ON r.project = pr.project AND r.trace_id = pr.trace_id
        WHERE pr.replans > 0
        ORDER BY pr.replan_cost_usd + pr.reexecution_cost_usd DESC, pr.replans DESC, pr.last_at DESC, pr.trace_id
        LIMIT {TOP_RUNS}
        {_NULLS}
        """,
        params,
    )
    return totals, versions, dicts(cur)


def _routes(cur: Any, filters: CommonFilters) -> list[dict[str, Any]]:
    """The router's decisions per (rule's granularity, granularity used), as DuckDB's `_routes`."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.route_rule AS rule, p.granularity, count() AS replans,
            countIf(ifNull(p.route_escalated, false)) AS escalated,
            countIf(ifNull(p.escalation_reset, false)) AS escalation_resets,
            {_top("p.trace_id", "p.start_time")} AS examples
        {source} WHERE p.operation = ?
        GROUP BY p.route_rule, p.granularity ORDER BY replans DESC, rule ASC NULLS LAST, p.granularity
        """,
        [*params, _REPLAN],
    )
    return dicts(cur)


def _steps(cur: Any, filters: CommonFilters) -> dict[str, Any]:
    """Steps admitted replans kept, dropped and added, and the results they found stale or void."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT toInt64(sum(length(p.kept))) AS kept, toInt64(sum(length(p.dropped))) AS dropped,
            toInt64(sum(length(p.added))) AS added,
            toInt64(ifNull(sum(p.variables_stale), 0)) AS stale_results,
            toInt64(ifNull(sum(p.variables_void), 0)) AS void_results
        {source} WHERE p.operation = ? AND p.verdict = ?
        """,
        [*params, _REPLAN, _ADMITTED],
    )
    return dicts(cur)[0]


# Array columns ClickHouse cannot store as NULL: an attribute the span did not have reads [] here and
# NULL on DuckDB. Lessons are only ever sent non-empty; the step changes only on admitted replans.
_LESSONS = ("lessons",)
_CHANGES = ("kept", "dropped", "added")


def _recent(cur: Any, filters: CommonFilters) -> list[dict[str, Any]]:
    """The newest replan spans with what the replanner was given and what it changed."""
    source, params = _plan_spans(filters)
    cur.execute(
        f"""
        SELECT p.trace_id, p.project, p.start_time, r.agent, r.version, p.from_version, p.to_version,
            p.granularity, p.route_rule, p.route_escalated, p.escalation_reset, p.cause, p.failed_step,
            p.verdict, p.refusal, p.kept, p.dropped, p.added, p.lessons, p.variables_clean, p.variables_stale,
            p.variables_void, p.tool_calls, p.budget_used_tokens
        {source} LEFT JOIN runs AS r FINAL ON r.project = p.project AND r.trace_id = p.trace_id
        WHERE p.operation = ?
        ORDER BY p.start_time DESC, p.span_id
        LIMIT {RECENT_REPLANS}{_NULLS}
        """,
        [*params, _REPLAN],
    )
    rows = dicts(cur)
    for row in rows:
        for column in _LESSONS:
            row[column] = row[column] or None
        if row["verdict"] != _ADMITTED:
            for column in _CHANGES:
                row[column] = row[column] or None
    return rows


def replanning_rows(cur: Any, filters: CommonFilters) -> ReplanningRows:
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
