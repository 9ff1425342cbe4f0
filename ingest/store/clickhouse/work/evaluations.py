"""ClickHouse form of `ingest.evaluators.state`: which runs a rule still has to score, and what each
evaluation gave.

The same sample as DuckDB's: `md5_number(x)` there is the MD5 digest read as a little-endian
128-bit number, which is `reinterpretAsUInt128(MD5(x))` here, so a run is in or out of a rule's
sample on both stores alike. An outcome is one row keyed (project, rule, trace_id) in
ReplacingMergeTree(revision, is_deleted): a re-evaluation's row replaces the earlier one (FINAL).
The worker writes it after the score (ingest/evaluators/service.py), so a restart in between
evaluates the run again and replaces the same score; none is lost, none counted twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.evaluators.rules import EvaluatorRule, eval_run_id
from ingest.evaluators.state import DONE, ERROR, SAMPLE_BUCKETS, Outcome, RuleSummary, _outcome
from ingest.queries.filters import CommonFilters, Where, project_clause
from ingest.store.clickhouse.queries._common import runs_common_where
from ingest.store.clickhouse.schema_work import EVALUATIONS
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision

__all__ = ["DONE", "ERROR", "Outcome", "RuleSummary", "candidates", "count_candidates", "recent", "record",
           "summaries"]

_COLUMNS = ("project, rule, trace_id, status, score_name, score_id, value_numeric, value_label, passed, reason, "
            "attempts, cost_usd, judge_trace_ids, run_start, evaluated_at")
_NOT_EVALUATED = "(project, trace_id) NOT IN (SELECT project, trace_id FROM evaluations WHERE rule = ?)"
_SETTLED = "greatest(coalesce(span_end, end_time, updated_at), updated_at) <= ?"


def _rule_where(rule: EvaluatorRule, projects: frozenset[str] | None) -> Where:
    scope = projects
    if rule.project is not None:
        scope = frozenset({rule.project}) if projects is None else frozenset({rule.project}) & projects
    where = runs_common_where(CommonFilters(
        projects=scope, agent=rule.agent, version=rule.version, environment=rule.environment,
        modes=frozenset(m.value for m in rule.modes),
    ))
    where.add("ok IS NOT NULL")  # the run has an outcome (its top span is in)
    if rule.ok is not None:
        where.add("ok = ?", rule.ok)
    if rule.stop_reason is not None:
        where.add("stop_reason = ?", rule.stop_reason)
    # never a judge's own run: a rule over eval runs would otherwise judge its judgments
    where.add("eval_run_id IS NULL OR NOT startsWith(eval_run_id, ?)", eval_run_id(""))
    where.add(f"reinterpretAsUInt128(MD5(concat(?, char(31), project, char(31), trace_id))) % {SAMPLE_BUCKETS} < ?",
              rule.name, round(rule.sample_rate * SAMPLE_BUCKETS))
    return where


def candidates(
    cur: Any, rule: EvaluatorRule, now: datetime, limit: int, *,
    projects: frozenset[str] | None = None, since: datetime | None = None, backfill: bool = False,
) -> list[tuple[str, str]]:
    """(project, trace_id) of runs `rule` matches and samples that have no outcome yet, oldest first
    (the meaning of DuckDB's: online within the lookback and quiet for the delay; backfill since `since`)."""
    where = _rule_where(rule, projects)
    where.add(_SETTLED, now - rule.delay)
    if backfill:
        if since is not None:
            where.add("start_time >= ?", since)
    else:
        where.add("updated_at >= ?", now - rule.lookback)
    where.add(_NOT_EVALUATED, rule.name)
    order = "start_time, trace_id" if backfill else "updated_at, trace_id"
    cur.execute(f"SELECT project, trace_id FROM runs WHERE {where.sql()} ORDER BY {order} LIMIT ?",
                [*where.params, limit])
    return [(r[0], r[1]) for r in cur.fetchall()]


def count_candidates(cur: Any, rule: EvaluatorRule, now: datetime, since: datetime | None,
                     projects: frozenset[str] | None = None) -> int:
    """How many runs a backfill since `since` would score (its progress bar's total)."""
    where = _rule_where(rule, projects)
    where.add(_SETTLED, now - rule.delay)
    if since is not None:
        where.add("start_time >= ?", since)
    where.add(_NOT_EVALUATED, rule.name)
    row = cur.execute(f"SELECT count() FROM runs WHERE {where.sql()}", where.params).fetchone()
    return int(row[0]) if row else 0


def record(conn: WorkConnection, outcome: Outcome, now: datetime) -> None:
    """Store `outcome`, replacing an earlier one of the same (project, rule, run). Worker only."""
    conn.insert(EVALUATIONS, [{
        "project": outcome.project, "rule": outcome.rule, "trace_id": outcome.trace_id, "status": outcome.status,
        "score_name": outcome.score_name, "score_id": outcome.score_id, "value_numeric": outcome.value_numeric,
        "value_label": outcome.value_label, "passed": outcome.passed, "reason": outcome.reason,
        "attempts": outcome.attempts, "cost_usd": outcome.cost_usd, "judge_trace_ids": outcome.judge_trace_ids,
        "run_start": outcome.run_start, "evaluated_at": outcome.evaluated_at or now, "revision": next_revision(),
        "is_deleted": 0,
    }])


def summaries(cur: Any, projects: frozenset[str] | None, since: datetime | None) -> dict[str, RuleSummary]:
    """Per rule: evaluations since `since` in the readable projects, how they came out, their cost."""
    where = Where()
    project_clause(where, projects)
    if since is not None:
        where.add("evaluated_at >= ?", since)
    cur.execute(
        "SELECT rule, countIf(status = 'done'), countIf(ifNull(passed, false)), countIf(passed = false), "
        "countIf(status = 'error'), coalesce(sum(cost_usd), 0), max(evaluated_at) "
        f"FROM evaluations WHERE {where.sql()} GROUP BY rule",
        where.params,
    )
    return {r[0]: RuleSummary(int(r[1]), int(r[2]), int(r[3]), int(r[4]), float(r[5]), r[6]) for r in cur.fetchall()}


def recent(cur: Any, rule: str, projects: frozenset[str] | None, limit: int,
           since: datetime | None = None) -> list[Outcome]:
    """The rule's latest outcomes in the readable projects, newest first."""
    where = Where()
    where.add("rule = ?", rule)
    project_clause(where, projects)
    if since is not None:
        where.add("evaluated_at >= ?", since)
    cur.execute(f"SELECT {_COLUMNS} FROM evaluations WHERE {where.sql()} ORDER BY evaluated_at DESC, trace_id "
                "LIMIT ?", [*where.params, limit])
    return [_outcome(r) for r in cur.fetchall()]
