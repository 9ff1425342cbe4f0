"""Regression reports over the store: window vs baseline, release vs release, and drift.

Each function takes an open read cursor (the caller owns the time limit) and the query namespace of
the store it reads (`queries`, from `ingest.store.backend.queries_of(store)`; DuckDB's by default),
and returns a typed report; the HTTP layer and the alert evaluator both call these, so an alert and
the Regressions page can never disagree about what changed, on either store. Only the input SQL
(`regressions`, `score_metrics`) is per backend; the statistics here are shared.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from pydantic import BaseModel

from ingest.analytics.drift import BucketStats, DriftConfig, DriftResult, cusum
from ingest.analytics.durations import parse_duration
from ingest.analytics.findings import (
    Finding,
    Pair,
    RegressionConfig,
    RunSet,
    ScoreColumn,
    ScoreType,
    build_findings,
)
from ingest.analytics.metrics import PER_RUN_METRICS, Metric, MetricKind, drift_metric
from ingest.queries.filters import CommonFilters
from ingest.queries.regressions import SAMPLE_COLUMNS
from ingest.store.backend import DUCKDB_QUERIES, QueryNamespace
from tracer.conventions import ReleaseCohort

_EPOCH = datetime(1970, 1, 1)
_COL = {name: i for i, name in enumerate(SAMPLE_COLUMNS)}


class RegressionReport(BaseModel):
    comparison: str  # window | release
    generated_at: datetime
    config: RegressionConfig
    flagged: int
    findings: list[Finding]


def _runsets(rows: list[tuple[object, ...]], key: int) -> dict[object, RunSet]:
    """Group sample rows by column `key` into column-wise RunSets (NULL numbers become NaN)."""
    grouped: dict[object, list[tuple[object, ...]]] = {}
    for row in rows:
        grouped.setdefault(row[key], []).append(row)
    out = {}
    for k, group in grouped.items():
        values = {
            m: np.array([math.nan if r[_COL[m]] is None else float(r[_COL[m]]) for r in group], dtype=float)
            for m in PER_RUN_METRICS
        }
        out[k] = RunSet(
            trace_ids=[str(r[_COL["trace_id"]]) for r in group],
            values=values,
            ok=[None if r[_COL["ok"]] is None else bool(r[_COL["ok"]]) for r in group],
            stop_reasons=[None if r[_COL["stop_reason"]] is None else str(r[_COL["stop_reason"]]) for r in group],
            handoffs=[r[_COL["handoff_reason"]] is not None for r in group],
        )
    return out


def _attach_scores(sets: dict[object, RunSet], rows: list[tuple[object, ...]]) -> None:
    """Put each run's score values (ingest/queries/score_metrics.py) into its RunSet's columns.

    A score name sent with two data types (no config, values of both kinds) is read as the type most
    runs have; the other rows are left out rather than mixed into one test."""
    where = {t: (runs, i) for runs in sets.values() for i, t in enumerate(runs.trace_ids)}
    counts = Counter((str(r[1]), str(r[2])) for r in rows)
    types: dict[str, str] = {}
    for (name, data_type), _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        types.setdefault(name, data_type)
    for trace_id, name, data_type, number, label in rows:
        hit = where.get(str(trace_id))
        if hit is None or types[str(name)] != data_type:
            continue
        runs, i = hit
        col = runs.scores.get(str(name))
        if col is None:
            col = runs.scores[str(name)] = ScoreColumn(
                ScoreType(str(data_type)), np.full(len(runs), math.nan), [None] * len(runs)
            )
        col.numbers[i] = math.nan if number is None else float(number)  # type: ignore[arg-type]
        col.labels[i] = None if label is None else str(label)


def runs_by_agent(
    cur: Any, filters: CommonFilters, score_names: list[str] | None = None, queries: QueryNamespace = DUCKDB_QUERIES,
) -> dict[str | None, RunSet]:
    """The runs matching `filters` (most recent MAX_SAMPLE_RUNS), one RunSet per agent, with the
    values of the scores named (`score_names` None: every score; []: none, nothing is read)."""
    sets = _runsets(queries.regressions.sample_runs(cur, filters), _COL["agent"])
    if score_names != []:
        _attach_scores(sets, queries.score_metrics.score_values(cur, filters, names=score_names))
    return sets  # type: ignore[return-value]


def _label(since: datetime, until: datetime) -> str:
    return f"{since.isoformat()}Z .. {until.isoformat()}Z"


def window_report(
    cur: Any, filters: CommonFilters, now: datetime, window: timedelta | str,
    baseline: timedelta | str, config: RegressionConfig, queries: QueryNamespace = DUCKDB_QUERIES,
) -> RegressionReport:
    """Per agent: the last `window` before `now` vs the `baseline` period right before it."""
    window, baseline = parse_duration(window), parse_duration(baseline)
    split = now - window
    start = split - baseline
    names = config.score_names()
    current = runs_by_agent(cur, replace(filters, since=split, until=now), names, queries)
    base = runs_by_agent(cur, replace(filters, since=start, until=split), names, queries)
    pairs = [
        Pair(agent, base.get(agent, RunSet()), current.get(agent, RunSet()), _label(start, split), _label(split, now))
        for agent in sorted(set(current) | set(base), key=lambda a: (a is None, str(a)))
    ]
    findings = build_findings(pairs, "window", config)
    return RegressionReport(
        comparison="window", generated_at=now, config=config, flagged=sum(f.flagged for f in findings), findings=findings
    )


def release_pairs(
    cur: Any, filters: CommonFilters, baseline_version: str | None,
    current_version: str | None, queries: QueryNamespace = DUCKDB_QUERIES,
) -> list[tuple[str | None, str, str]]:
    """(agent, baseline version, current version) per agent. Unnamed versions default to the newest
    version (by first run) as current and the one released before it as baseline.

    "First run" is over the whole history, not the time range: with `since=24h` and both versions
    still serving, the first run inside the window says nothing about which was released first
    (runs of interleaved versions start within moments of each other there), and ordering by it
    could compare the new version against the old one the wrong way round. The time range only
    decides which versions take part (those with runs in it)."""
    agent_versions = queries.regressions.agent_versions
    in_range = {(i.agent, i.version) for i in agent_versions(cur, replace(filters, version=None))}
    by_agent: dict[str | None, list[str | None]] = {}
    for info in agent_versions(cur, replace(filters, version=None, since=None, until=None)):
        if (info.agent, info.version) in in_range:
            by_agent.setdefault(info.agent, []).append(info.version)
    out = []
    for agent, versions in by_agent.items():
        named = [v for v in versions if v is not None]
        cur_v = current_version if current_version is not None else (named[-1] if named else None)
        if cur_v is None or cur_v not in named:
            continue
        if baseline_version is not None:
            base_v = baseline_version if baseline_version in named else None
        else:
            before = named[: named.index(cur_v)]
            base_v = before[-1] if before else None
        if base_v is not None and base_v != cur_v:
            out.append((agent, base_v, cur_v))
    return out


def release_report(
    cur: Any, filters: CommonFilters, now: datetime, baseline_version: str | None,
    current_version: str | None, config: RegressionConfig, queries: QueryNamespace = DUCKDB_QUERIES,
) -> RegressionReport:
    """Per agent: runs of the current version vs runs of the baseline version (see release_pairs)."""
    pairs = []
    for agent, base_v, cur_v in release_pairs(cur, filters, baseline_version, current_version, queries):
        scope = replace(filters, agent=agent, version=None)
        sets = _runsets(queries.regressions.sample_runs(cur, scope, versions=[base_v, cur_v]), _COL["version"])
        if config.score_names() != []:
            _attach_scores(sets, queries.score_metrics.score_values(cur, scope, versions=[base_v, cur_v],
                                                                    names=config.score_names()))
        pairs.append(Pair(agent, sets.get(base_v, RunSet()), sets.get(cur_v, RunSet()), f"version {base_v}",
                          f"version {cur_v}"))
    findings = build_findings(pairs, "release", config)
    return RegressionReport(
        comparison="release", generated_at=now, config=config, flagged=sum(f.flagged for f in findings),
        findings=findings,
    )


def cohort_report(
    cur: Any, filters: CommonFilters, now: datetime, release: str | None,
    config: RegressionConfig, queries: QueryNamespace = DUCKDB_QUERIES,
) -> RegressionReport:
    """Per agent and gray release: the candidate cohort vs the stable cohort over the same period
    (`filters`' since..until), so both sides saw the same traffic, hours and incidents. The
    statistics are the release comparison's (Holm across the report, the effect floor)."""
    pairs = []
    for info in queries.regressions.releases_seen(cur, filters, release):
        scope = replace(filters, agent=info.agent)
        rows = queries.regressions.sample_cohort_runs(cur, scope, info.release)
        cohort = len(SAMPLE_COLUMNS)
        sets = _runsets(rows, cohort)
        if config.score_names() != []:
            _attach_scores(sets, queries.score_metrics.score_values(cur, scope, names=config.score_names()))
        versions = {str(r[cohort]): r[_COL["version"]] for r in rows}
        stable, candidate = ReleaseCohort.STABLE.value, ReleaseCohort.CANDIDATE.value
        pairs.append(Pair(info.agent, sets.get(stable, RunSet()), sets.get(candidate, RunSet()),
                          f"stable of {info.release} (version {versions.get(stable)})",
                          f"candidate of {info.release} (version {versions.get(candidate)})", release=info.release))
    findings = build_findings(pairs, "cohort", config)
    return RegressionReport(
        comparison="cohort", generated_at=now, config=config, flagged=sum(f.flagged for f in findings),
        findings=findings,
    )


def _score_drift_rows(
    cur: Any, filters: CommonFilters, metric: Metric, origin: datetime, bucket_us: int, queries: QueryNamespace,
) -> tuple[list[tuple[str | None, int, int, float, float]], str | None]:
    """(bucket rows, why not) of a score metric: its run values per agent and bucket."""
    assert metric.score is not None
    data_type = queries.score_metrics.score_types(cur, filters, [metric.score]).get(metric.score)
    if data_type is None:
        return [], None
    if data_type == ScoreType.CATEGORICAL and metric.label is None:
        return [], f"{metric.score} is categorical: drift watches a label's share (score:NAME=LABEL)"
    if data_type == ScoreType.NUMERIC and metric.label is not None:
        return [], f"{metric.score} is numeric: drift watches the score itself (score:NAME), it has no labels"
    rows = queries.score_metrics.score_buckets(cur, filters, metric.score, data_type, metric.label, origin, bucket_us)
    return rows, None


def _worst_scored(
    cur: Any, filters: CommonFilters, metric: Metric, queries: QueryNamespace, limit: int = 3
) -> list[str]:
    """Trace ids of the runs with the lowest score (or the watched label) under `filters` (drift evidence)."""
    assert metric.score is not None
    rows = queries.score_metrics.score_values(cur, filters, names=[metric.score])
    if metric.label is not None:
        return sorted(str(r[0]) for r in rows if r[4] == metric.label)[:limit]
    scored = [r for r in rows if r[3] is not None]
    scored.sort(key=lambda r: (float(r[3]), str(r[0])))  # type: ignore[arg-type]
    return [str(r[0]) for r in scored[:limit]]


def drift_report(
    cur: Any, filters: CommonFilters, since: datetime, until: datetime, config: DriftConfig,
    metric: str = "steps", queries: QueryNamespace = DUCKDB_QUERIES,
) -> list[DriftResult]:
    """CUSUM of `metric` per agent (mean steps per run, or a score's mean / share per scored run),
    over buckets of `config.bucket` from `since` to `until`."""
    watched = drift_metric(metric)
    bucket = parse_duration(config.bucket)
    origin = _EPOCH + ((since - _EPOCH) // bucket) * bucket
    count = max(1, -(-(until - origin) // bucket))
    scope = replace(filters, since=since, until=until)
    bucket_us = bucket // timedelta(microseconds=1)
    if watched.kind is MetricKind.SCORE:
        rows, problem = _score_drift_rows(cur, scope, watched, origin, bucket_us, queries)
        if problem is not None:
            return [DriftResult(agent=filters.agent, metric=watched.key, verdict="insufficient_data", flagged=False,
                                reference_mean=None, reference_sd=None, reference_runs=0, current_mean=None,
                                relative_change=None, first_alarm=None, reason=problem, points=[])]
    else:
        rows = queries.regressions.steps_buckets(cur, scope, origin, bucket_us)
    per_agent: dict[str | None, dict[int, tuple[int, float, float]]] = {}
    for agent, idx, n, total, total_sq in rows:
        per_agent.setdefault(agent, {})[idx] = (n, total, total_sq)
    results = []
    for agent in sorted(per_agent, key=lambda a: (a is None, str(a))):
        data = per_agent[agent]
        buckets = [
            BucketStats(origin + i * bucket, *data.get(i, (0, 0.0, 0.0))) for i in range(count)
        ]
        result = cusum(agent, buckets, config)
        result.metric = watched.key
        if result.flagged:
            last = max(i for i in data)
            start = origin + last * bucket
            latest = replace(filters, agent=agent, since=start, until=start + bucket)
            result.examples = (_worst_scored(cur, latest, watched, queries) if watched.kind is MetricKind.SCORE
                               else queries.regressions.longest_runs(cur, latest))
        results.append(result)
    results.sort(key=lambda r: not r.flagged)
    return results
