"""Read-side SQL of regression detection and drift: per-run samples, versions, bucketed steps.

Samples are capped (most recent first) so that one request over a huge range stays bounded in
memory and time; the statistics need hundreds of runs per side, not millions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where
from tracer.conventions import ReleaseCohort

_STABLE, _CANDIDATE = ReleaseCohort.STABLE.value, ReleaseCohort.CANDIDATE.value

MAX_SAMPLE_RUNS = 100_000

SAMPLE_COLUMNS = (
    "agent", "version", "trace_id", "start_time", "steps", "input_tokens", "output_tokens", "cost_usd",
    "duration_ms", "tool_errors", "ok", "stop_reason", "handoff_reason",
)


@dataclass(frozen=True)
class VersionInfo:
    agent: str | None
    version: str | None
    first_seen: datetime
    last_seen: datetime
    runs: int


def sample_runs(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, versions: list[str] | None = None,
    limit: int = MAX_SAMPLE_RUNS,
) -> list[tuple[object, ...]]:
    """Runs matching `filters` (and one of `versions`, if given), newest first, SAMPLE_COLUMNS each."""
    where = runs_common_where(filters)
    if versions is not None:
        if not versions:
            return []
        where.add(f"version IN ({', '.join('?' for _ in versions)})", *versions)
    cur.execute(
        f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM runs WHERE {where.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id LIMIT ?",
        [*where.params, limit],
    )
    return cur.fetchall()


def agent_versions(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[VersionInfo]:
    """Every (agent, version) with its first/last run, oldest first within each agent."""
    where = runs_common_where(filters)
    cur.execute(
        f"SELECT agent, version, min(start_time), max(start_time), count(*) FROM runs "
        f"WHERE {where.sql()} AND start_time IS NOT NULL GROUP BY agent, version "
        "ORDER BY agent NULLS FIRST, min(start_time), version",
        where.params,
    )
    return [VersionInfo(r[0], r[1], r[2], r[3], int(r[4])) for r in cur.fetchall()]


def steps_buckets(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, origin: datetime, bucket_us: int
) -> list[tuple[str | None, int, int, float, float]]:
    """(agent, bucket index from `origin`, runs, sum of steps, sum of squared steps) per bucket."""
    where = runs_common_where(filters)
    cur.execute(
        "SELECT agent, (epoch_us(start_time) - epoch_us(?::TIMESTAMP)) // ? AS bucket, count(*), "
        "sum(steps)::DOUBLE, sum(steps::DOUBLE * steps::DOUBLE) "
        f"FROM runs WHERE {where.sql()} AND steps IS NOT NULL AND start_time IS NOT NULL "
        "GROUP BY agent, bucket ORDER BY agent NULLS FIRST, bucket",
        [origin, bucket_us, *where.params],
    )
    return [(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in cur.fetchall()]


def longest_runs(cur: duckdb.DuckDBPyConnection, filters: CommonFilters, limit: int = 3) -> list[str]:
    """Trace ids of the runs with the most steps under `filters` (drift evidence)."""
    where = runs_common_where(filters)
    cur.execute(
        f"SELECT trace_id FROM runs WHERE {where.sql()} AND steps IS NOT NULL "
        "ORDER BY steps DESC, start_time DESC, trace_id LIMIT ?",
        [*where.params, limit],
    )
    return [r[0] for r in cur.fetchall()]


@dataclass(frozen=True)
class ReleaseInfo:
    """One gray release of one agent seen in range: its runs per cohort."""

    agent: str | None
    release: str
    stable: int
    candidate: int


def releases_seen(cur: duckdb.DuckDBPyConnection, filters: CommonFilters, release: str | None = None) -> list[ReleaseInfo]:
    """Every (agent, release) with routed runs under `filters`, by agent then release name."""
    where = runs_common_where(filters)
    where.add("release_name IS NOT NULL")
    if release is not None:
        where.add("release_name = ?", release)
    cur.execute(
        "SELECT agent, release_name, count(*) FILTER (WHERE release_cohort = ?), "
        "count(*) FILTER (WHERE release_cohort = ?) "
        f"FROM runs WHERE {where.sql()} GROUP BY agent, release_name ORDER BY agent NULLS FIRST, release_name",
        [_STABLE, _CANDIDATE, *where.params],
    )
    return [ReleaseInfo(r[0], r[1], int(r[2]), int(r[3])) for r in cur.fetchall()]


def sample_cohort_runs(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, release: str, limit: int = MAX_SAMPLE_RUNS
) -> list[tuple[object, ...]]:
    """The stable and candidate runs of `release` under `filters`, newest first: SAMPLE_COLUMNS and
    then the cohort."""
    where = runs_common_where(filters)
    where.add("release_name = ?", release)
    where.add("release_cohort IN (?, ?)", _STABLE, _CANDIDATE)
    cur.execute(
        f"SELECT {', '.join(SAMPLE_COLUMNS)}, release_cohort FROM runs WHERE {where.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id LIMIT ?",
        [*where.params, limit],
    )
    return cur.fetchall()
