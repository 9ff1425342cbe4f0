"""Regression reports over the store: window vs baseline, release vs release, and drift.

Each function takes an open read cursor (the caller owns the time limit) and returns a typed report;
the HTTP layer and the alert evaluator both call these, so an alert and the Regressions page can
never disagree about what changed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

import duckdb
import numpy as np
from pydantic import BaseModel

from ingest.analytics.drift import BucketStats, DriftConfig, DriftResult, cusum
from ingest.analytics.durations import parse_duration
from ingest.analytics.findings import Finding, Pair, RegressionConfig, RunSet, build_findings
from ingest.analytics.metrics import PER_RUN_METRICS
from ingest.queries.filters import CommonFilters
from ingest.queries.regressions import (
    SAMPLE_COLUMNS,
    agent_versions,
    longest_runs,
    sample_runs,
    steps_buckets,
)

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
        )
    return out


def runs_by_agent(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> dict[str | None, RunSet]:
    """The runs matching `filters` (most recent MAX_SAMPLE_RUNS), one RunSet per agent."""
    return _runsets(sample_runs(cur, filters), _COL["agent"])  # type: ignore[return-value]


def _label(since: datetime, until: datetime) -> str:
    return f"{since.isoformat()}Z .. {until.isoformat()}Z"


def window_report(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, now: datetime, window: timedelta | str,
    baseline: timedelta | str, config: RegressionConfig,
) -> RegressionReport:
    """Per agent: the last `window` before `now` vs the `baseline` period right before it."""
    window, baseline = parse_duration(window), parse_duration(baseline)
    split = now - window
    start = split - baseline
    current = runs_by_agent(cur, replace(filters, since=split, until=now))
    base = runs_by_agent(cur, replace(filters, since=start, until=split))
    pairs = [
        Pair(agent, base.get(agent, RunSet()), current.get(agent, RunSet()), _label(start, split), _label(split, now))
        for agent in sorted(set(current) | set(base), key=lambda a: (a is None, str(a)))
    ]
    findings = build_findings(pairs, "window", config)
    return RegressionReport(
        comparison="window", generated_at=now, config=config, flagged=sum(f.flagged for f in findings), findings=findings
    )


def release_pairs(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, baseline_version: str | None,
    current_version: str | None,
) -> list[tuple[str | None, str, str]]:
    """(agent, baseline version, current version) per agent. Unnamed versions default to the newest
    version (by first run) as current and the one released before it as baseline.

    "First run" is over the whole history, not the time range: with `since=24h` and both versions
    still serving, the first run inside the window says nothing about which was released first
    (runs of interleaved versions start within moments of each other there), and ordering by it
    could compare the new version against the old one the wrong way round. The time range only
    decides which versions take part (those with runs in it)."""
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
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, now: datetime, baseline_version: str | None,
    current_version: str | None, config: RegressionConfig,
) -> RegressionReport:
    """Per agent: runs of the current version vs runs of the baseline version (see release_pairs)."""
    pairs = []
    for agent, base_v, cur_v in release_pairs(cur, filters, baseline_version, current_version):
        rows = sample_runs(cur, replace(filters, agent=agent, version=None), versions=[base_v, cur_v])
        sets = _runsets(rows, _COL["version"])
        pairs.append(Pair(agent, sets.get(base_v, RunSet()), sets.get(cur_v, RunSet()), f"version {base_v}",
                          f"version {cur_v}"))
    findings = build_findings(pairs, "release", config)
    return RegressionReport(
        comparison="release", generated_at=now, config=config, flagged=sum(f.flagged for f in findings),
        findings=findings,
    )


def drift_report(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, since: datetime, until: datetime, config: DriftConfig
) -> list[DriftResult]:
    """CUSUM of mean steps per run, per agent, over buckets of `config.bucket` from `since` to `until`."""
    bucket = parse_duration(config.bucket)
    origin = _EPOCH + ((since - _EPOCH) // bucket) * bucket
    count = max(1, -(-(until - origin) // bucket))
    rows = steps_buckets(cur, replace(filters, since=since, until=until), origin, bucket // timedelta(microseconds=1))
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
        if result.flagged:
            last = max(i for i in data)
            start = origin + last * bucket
            result.examples = longest_runs(cur, replace(filters, agent=agent, since=start, until=start + bucket))
        results.append(result)
    results.sort(key=lambda r: not r.flagged)
    return results
