"""Evaluate one rule against the store: which subjects (agents) fire, with the evidence why.

Every kind reuses ingest.analytics, so an alert says exactly what the Regressions page shows.
Only regressions fire (a significant improvement is reported by the API, never paged).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from ingest.alerts.rules import AlertRule, RuleKind
from ingest.alerts.state import Outcome
from ingest.analytics.compare import drift_report, release_report, runs_by_agent, window_report
from ingest.analytics.findings import Finding, Pair, RegressionConfig, RunSet, Verdict, build_findings
from ingest.analytics.metrics import MetricKind, is_every_score, metric_by_key
from ingest.queries.filters import CommonFilters
from ingest.store.backend import DUCKDB_QUERIES, QueryNamespace

ALL = "*"


def rule_filters(rule: AlertRule) -> CommonFilters:
    return CommonFilters(
        projects=None if rule.project is None else frozenset({rule.project}),
        agent=rule.agent,
        environment=rule.environment,
        modes=frozenset(m.value for m in rule.modes),
    )


def rule_config(rule: AlertRule) -> RegressionConfig:
    return RegressionConfig(
        min_relative_change=rule.min_relative_change, alpha=rule.alpha, min_samples=rule.min_samples,
        metrics=[rule.metric],
    )


def _subject(agent: str | None, metric: str | None = None) -> str:
    """What an outcome is about: the agent, and the metric too when one rule checks several
    (`score:*`), so each score of each agent fires and resolves on its own."""
    name = agent if agent is not None else "(no agent)"
    return name if metric is None else f"{name} {metric}"


def _finding_outcome(f: Finding, per_metric: bool = False) -> Outcome:
    firing = f.verdict is Verdict.REGRESSION
    details: dict[str, Any] = f.model_dump(mode="json")
    summary = (
        f"{f.metric} {f.current.value:.4g} ({f.current.label}) vs {f.baseline.value:.4g} ({f.baseline.label}): "
        f"{f.verdict.value}, {f.reason}"
        if f.current.value is not None and f.baseline.value is not None
        else f"{f.metric}: {f.verdict.value}, {f.reason}"
    )
    return Outcome(_subject(f.agent, f.metric if per_metric else None), firing, f.current.value, summary, details,
                   [*f.current.examples, *f.baseline.examples] if firing else [])


def _threshold(cur: Any, rule: AlertRule, now: datetime, queries: QueryNamespace) -> list[Outcome]:
    """The window's value per agent, via the same machinery (an empty baseline side)."""
    metric = metric_by_key(rule.metric)
    config = RegressionConfig(min_samples=rule.min_samples, metrics=[rule.metric])
    sets = runs_by_agent(cur, replace(rule_filters(rule), since=now - rule.window, until=now), config.score_names(),
                         queries)
    below = metric.higher_is_worse is False  # a score: a value under the threshold is the bad one
    outcomes = []
    for agent, runs in sets.items():
        f = build_findings([Pair(agent, RunSet(), runs, "-", f"last {rule.window}")], "threshold", config)[0]
        value, n = f.current.value, f.current.n
        enough = n >= rule.min_samples and value is not None
        assert rule.threshold is not None
        firing = enough and (value < rule.threshold if below else value > rule.threshold)  # type: ignore[operator]
        what = "mean" if metric.kind.value == "per_run" else "rate"
        if metric.kind is MetricKind.SCORE:
            what = "mean" if f.test == "mann_whitney_u" else "share"
        if not enough:
            summary = f"{rule.metric}: {n} runs in the last {rule.window}, fewer than min_samples {rule.min_samples}"
        else:
            summary = (f"{rule.metric} {what} {value:.4g} over {n} runs in the last {rule.window} "
                       f"{('<' if firing else '>=') if below else ('>' if firing else '<=')} threshold {rule.threshold:g}")
        outcomes.append(Outcome(_subject(agent), firing, value, summary, f.model_dump(mode="json"),
                                f.current.examples if firing else []))  # type: ignore[arg-type]
    return outcomes


def evaluate(cur: Any, rule: AlertRule, now: datetime, queries: QueryNamespace = DUCKDB_QUERIES) -> list[Outcome]:
    """Outcomes of `rule` at `now`, one per agent seen (naive UTC `now`), read through the store's
    query namespace `queries` (ingest.store.backend.queries_of)."""
    if rule.kind is RuleKind.THRESHOLD:
        return _threshold(cur, rule, now, queries)
    per_metric = is_every_score(metric_by_key(rule.metric))
    if rule.kind is RuleKind.WINDOW:
        report = window_report(cur, rule_filters(rule), now, rule.window, rule.baseline, rule_config(rule), queries)
        return [_finding_outcome(f, per_metric) for f in report.findings]
    if rule.kind is RuleKind.RELEASE:
        report = release_report(cur, rule_filters(rule), now, rule.baseline_version, rule.current_version,
                                rule_config(rule), queries)
        return [_finding_outcome(f, per_metric) for f in report.findings]
    metric = metric_by_key(rule.metric)
    results = drift_report(cur, rule_filters(rule), now - rule.lookback, now, rule.drift, rule.metric, queries)
    # steps creeping up is the regression; a score (higher is better) or a watched label: its direction
    worse = "drift_up" if metric.higher_is_worse is not False else "drift_down"
    what = "mean steps per run" if metric.kind is not MetricKind.SCORE else metric.key
    outcomes = []
    for r in results:
        firing = r.verdict == worse
        outcomes.append(Outcome(_subject(r.agent), firing, r.current_mean, f"{what}: {r.reason}",
                                r.model_dump(mode="json", exclude={"points"}), r.examples if firing else []))
    return outcomes
