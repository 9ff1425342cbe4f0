"""The evaluations table: which runs a rule still has to score, and what each evaluation gave.

Why sampling is decided in SQL by a digest of (rule, project, trace id): the same run is in or out
on every pass, after a restart and in a backfill, without storing a row per sampled-out run, and a
rule's sampled-out runs can never crowd its candidates out of a page.

Why an outcome row is written after its score: the score is durable first (its id is a digest of
rule + run, so writing it twice stores one), then the outcome. A crash in between re-evaluates the
run after the restart and replaces the same score; no evaluation is lost and none is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from ingest.evaluators.rules import EvaluatorRule, eval_run_id
from ingest.queries.filters import CommonFilters, Where, project_clause, runs_common_where

SAMPLE_BUCKETS = 1_000_000
DONE = "done"
ERROR = "error"
_COLUMNS = ("project, rule, trace_id, status, score_name, score_id, value_numeric, value_label, passed, reason, "
            "attempts, cost_usd, judge_trace_ids, run_start, evaluated_at")


@dataclass(frozen=True)
class Outcome:
    """What one evaluation of `rule` on a run gave (status done) or why it gave nothing (error)."""

    project: str
    rule: str
    trace_id: str
    status: str
    score_name: str
    score_id: str | None
    value_numeric: float | None
    value_label: str | None
    passed: bool | None
    reason: str | None
    attempts: int
    cost_usd: float | None
    judge_trace_ids: list[str] = field(default_factory=list)
    run_start: datetime | None = None
    evaluated_at: datetime | None = None


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
    where.add("eval_run_id IS NULL OR NOT starts_with(eval_run_id, ?)", eval_run_id(""))
    where.add(f"md5_number(? || chr(31) || project || chr(31) || trace_id) % {SAMPLE_BUCKETS} < ?",
              rule.name, round(rule.sample_rate * SAMPLE_BUCKETS))
    return where


def candidates(
    cur: duckdb.DuckDBPyConnection, rule: EvaluatorRule, now: datetime, limit: int, *,
    projects: frozenset[str] | None = None, since: datetime | None = None, backfill: bool = False,
) -> list[tuple[str, str]]:
    """(project, trace_id) of runs `rule` matches and samples that have no outcome yet, oldest first.

    Online (`backfill=False`): runs stored or updated within the rule's lookback, quiet for its delay
    (no span added, and ended, at least `delay` ago). Backfill: runs that started since `since`, quiet
    for the delay too (a run still receiving spans is scored online once it settles)."""
    where = _rule_where(rule, projects)
    settled = now - rule.delay
    where.add("greatest(coalesce(span_end, end_time), updated_at) <= ?", settled)
    if backfill:
        if since is not None:
            where.add("start_time >= ?", since)
    else:
        where.add("updated_at >= ?", now - rule.lookback)
    where.add("NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.rule = ? AND e.project = runs.project "
              "AND e.trace_id = runs.trace_id)", rule.name)
    order = "start_time, trace_id" if backfill else "updated_at, trace_id"
    cur.execute(f"SELECT project, trace_id FROM runs WHERE {where.sql()} ORDER BY {order} LIMIT ?",
                [*where.params, limit])
    return [(r[0], r[1]) for r in cur.fetchall()]


def count_candidates(
    cur: duckdb.DuckDBPyConnection, rule: EvaluatorRule, now: datetime, since: datetime | None,
    projects: frozenset[str] | None = None,
) -> int:
    """How many runs a backfill since `since` would score (its progress bar's total)."""
    where = _rule_where(rule, projects)
    where.add("greatest(coalesce(span_end, end_time), updated_at) <= ?", now - rule.delay)
    if since is not None:
        where.add("start_time >= ?", since)
    where.add("NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.rule = ? AND e.project = runs.project "
              "AND e.trace_id = runs.trace_id)", rule.name)
    row = cur.execute(f"SELECT count(*) FROM runs WHERE {where.sql()}", where.params).fetchone()
    return int(row[0]) if row else 0


def record(conn: duckdb.DuckDBPyConnection, outcome: Outcome, now: datetime) -> None:
    """Store `outcome`, replacing an earlier one of the same (project, rule, run). Runs on the writer."""
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM evaluations WHERE project = ? AND rule = ? AND trace_id = ?",
                     [outcome.project, outcome.rule, outcome.trace_id])
        conn.execute(
            f"INSERT INTO evaluations ({_COLUMNS}) VALUES ({', '.join('?' for _ in range(15))})",
            [outcome.project, outcome.rule, outcome.trace_id, outcome.status, outcome.score_name, outcome.score_id,
             outcome.value_numeric, outcome.value_label, outcome.passed, outcome.reason, outcome.attempts,
             outcome.cost_usd, outcome.judge_trace_ids, outcome.run_start, outcome.evaluated_at or now],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@dataclass(frozen=True)
class RuleSummary:
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    cost_usd: float = 0.0
    last_evaluated: datetime | None = None


def summaries(
    cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None, since: datetime | None
) -> dict[str, RuleSummary]:
    """Per rule: evaluations since `since` in the readable projects, how they came out, their cost."""
    where = Where()
    project_clause(where, projects)
    if since is not None:
        where.add("evaluated_at >= ?", since)
    cur.execute(
        "SELECT rule, count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE passed), "
        "count(*) FILTER (WHERE passed = false), count(*) FILTER (WHERE status = 'error'), "
        f"coalesce(sum(cost_usd), 0), max(evaluated_at) FROM evaluations WHERE {where.sql()} GROUP BY rule",
        where.params,
    )
    return {r[0]: RuleSummary(int(r[1]), int(r[2]), int(r[3]), int(r[4]), float(r[5]), r[6]) for r in cur.fetchall()}


def recent(
    cur: duckdb.DuckDBPyConnection, rule: str, projects: frozenset[str] | None, limit: int,
    since: datetime | None = None,
) -> list[Outcome]:
    """The rule's latest outcomes in the readable projects, newest first."""
    where = Where()
    where.add("rule = ?", rule)
    project_clause(where, projects)
    if since is not None:
        where.add("evaluated_at >= ?", since)
    cur.execute(f"SELECT {_COLUMNS} FROM evaluations WHERE {where.sql()} ORDER BY evaluated_at DESC, trace_id "
                "LIMIT ?", [*where.params, limit])
    return [_outcome(r) for r in cur.fetchall()]


def _outcome(r: tuple[Any, ...]) -> Outcome:
    return Outcome(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], int(r[10]), r[11], list(r[12] or []),
                   r[13], r[14])


__all__ = ["DONE", "ERROR", "Outcome", "RuleSummary", "candidates", "count_candidates", "recent", "record",
           "summaries"]
