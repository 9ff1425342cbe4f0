"""ClickHouse form of `ingest.queries.regressions`: the per-run samples, versions, drift buckets and
gray-release cohorts the regression statistics (ingest/analytics/compare.py) compare.

Same rows in the same order as DuckDB's: runs are read FINAL (the latest revision of a run rewritten
by late spans, once), `count(*) FILTER (...)` is `countIf`, and bucket indexes use `intDiv` on
microseconds since the epoch (truncating toward zero, as DuckDB's integer `//` does on the
non-negative offsets the callers pass). The sample cap is DuckDB's `MAX_SAMPLE_RUNS`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.filters import CommonFilters
from ingest.queries.regressions import MAX_SAMPLE_RUNS, SAMPLE_COLUMNS, ReleaseInfo, VersionInfo
from ingest.store.clickhouse.queries._common import RUNS, runs_common_where
from tracer.conventions import ReleaseCohort

__all__ = [
    "MAX_SAMPLE_RUNS", "SAMPLE_COLUMNS", "ReleaseInfo", "VersionInfo", "agent_versions", "longest_runs",
    "releases_seen", "sample_cohort_runs", "sample_runs", "steps_buckets",
]

_STABLE, _CANDIDATE = ReleaseCohort.STABLE.value, ReleaseCohort.CANDIDATE.value
_NEWEST_FIRST = "ORDER BY start_time DESC NULLS LAST, trace_id ASC LIMIT ?"


def sample_runs(
    cur: Any, filters: CommonFilters, versions: list[str] | None = None, limit: int = MAX_SAMPLE_RUNS,
) -> list[tuple[object, ...]]:
    """Runs matching `filters` (and one of `versions`, if given), newest first, SAMPLE_COLUMNS each."""
    where = runs_common_where(filters)
    if versions is not None:
        if not versions:
            return []
        where.add(f"version IN ({', '.join('?' for _ in versions)})", *versions)
    cur.execute(
        f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM {RUNS} WHERE {where.sql()} {_NEWEST_FIRST}",
        [*where.params, limit],
    )
    return cur.fetchall()


def agent_versions(cur: Any, filters: CommonFilters) -> list[VersionInfo]:
    """Every (agent, version) with its first/last run, oldest first within each agent."""
    where = runs_common_where(filters)
    cur.execute(
        "SELECT agent, version, min(start_time) AS first_run, max(start_time) AS last_run, count() AS n "
        f"FROM {RUNS} WHERE {where.sql()} AND start_time IS NOT NULL GROUP BY agent, version "
        "ORDER BY agent ASC NULLS FIRST, first_run ASC, version ASC NULLS LAST",
        where.params,
    )
    return [VersionInfo(r[0], r[1], r[2], r[3], int(r[4])) for r in cur.fetchall()]


def steps_buckets(
    cur: Any, filters: CommonFilters, origin: datetime, bucket_us: int
) -> list[tuple[str | None, int, int, float, float]]:
    """(agent, bucket index from `origin`, runs, sum of steps, sum of squared steps) per bucket."""
    where = runs_common_where(filters)
    cur.execute(
        "SELECT agent, intDiv(toUnixTimestamp64Micro(start_time) - toUnixTimestamp64Micro(?), ?) AS bucket, "
        "count(), toFloat64(sum(steps)), sum(toFloat64(steps) * toFloat64(steps)) "
        f"FROM {RUNS} WHERE {where.sql()} AND steps IS NOT NULL AND start_time IS NOT NULL "
        "GROUP BY agent, bucket ORDER BY agent ASC NULLS FIRST, bucket ASC",
        [origin, bucket_us, *where.params],
    )
    return [(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in cur.fetchall()]


def longest_runs(cur: Any, filters: CommonFilters, limit: int = 3) -> list[str]:
    """Trace ids of the runs with the most steps under `filters` (drift evidence)."""
    where = runs_common_where(filters)
    cur.execute(
        f"SELECT trace_id FROM {RUNS} WHERE {where.sql()} AND steps IS NOT NULL "
        "ORDER BY steps DESC, start_time DESC NULLS LAST, trace_id ASC LIMIT ?",
        [*where.params, limit],
    )
    return [r[0] for r in cur.fetchall()]


def releases_seen(cur: Any, filters: CommonFilters, release: str | None = None) -> list[ReleaseInfo]:
    """Every (agent, release) with routed runs under `filters`, by agent then release name."""
    where = runs_common_where(filters)
    where.add("release_name IS NOT NULL")
    if release is not None:
        where.add("release_name = ?", release)
    cur.execute(
        "SELECT agent, release_name, countIf(release_cohort = ?), countIf(release_cohort = ?) "
        f"FROM {RUNS} WHERE {where.sql()} GROUP BY agent, release_name "
        "ORDER BY agent ASC NULLS FIRST, release_name ASC",
        [_STABLE, _CANDIDATE, *where.params],
    )
    return [ReleaseInfo(r[0], r[1], int(r[2]), int(r[3])) for r in cur.fetchall()]


def sample_cohort_runs(
    cur: Any, filters: CommonFilters, release: str, limit: int = MAX_SAMPLE_RUNS
) -> list[tuple[object, ...]]:
    """The stable and candidate runs of `release` under `filters`, newest first: SAMPLE_COLUMNS and
    then the cohort."""
    where = runs_common_where(filters)
    where.add("release_name = ?", release)
    where.add("release_cohort IN (?, ?)", _STABLE, _CANDIDATE)
    cur.execute(
        f"SELECT {', '.join(SAMPLE_COLUMNS)}, release_cohort FROM {RUNS} WHERE {where.sql()} {_NEWEST_FIRST}",
        [*where.params, limit],
    )
    return cur.fetchall()
