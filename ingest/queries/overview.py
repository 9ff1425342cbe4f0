"""Aggregates over runs for the overview page: totals, stop-reason mix, and a time series.

Buckets are numbered in SQL from the range start (epoch microseconds, integer division) rather
than with `time_bucket`, so the bucket origin is exactly the requested `since` and the Python side
can fill empty buckets with zeros without guessing DuckDB's alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where

_AGGREGATES = """
    count(*) AS runs,
    count(*) FILTER (WHERE ok) AS ok_runs,
    count(*) FILTER (WHERE NOT ok) AS failed_runs,
    quantile_cont(duration_ms, 0.5) AS p50_duration_ms,
    quantile_cont(duration_ms, 0.95) AS p95_duration_ms,
    avg(steps) AS mean_steps,
    COALESCE(sum(input_tokens), 0) AS input_tokens,
    COALESCE(sum(output_tokens), 0) AS output_tokens,
    COALESCE(sum(cost_usd), 0.0) AS cost_usd,
    COALESCE(sum(llm_calls), 0) AS llm_calls,
    COALESCE(sum(tool_calls), 0) AS tool_calls,
    COALESCE(sum(tool_errors), 0) AS tool_errors,
    count(*) FILTER (WHERE handoff_reason IS NOT NULL) AS handoff_runs
"""


@dataclass(frozen=True)
class OverviewRows:
    totals: dict[str, Any]
    stop_reasons: list[tuple[str | None, int]]
    buckets: dict[int, dict[str, Any]]  # bucket index from `origin` -> aggregates
    # (agent, version, runs, handoff runs, {reason: runs}) per agent version, most runs first
    handoffs: list[tuple[str | None, str | None, int, int, dict[str, int]]]


def _dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def overview(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, origin: datetime, bucket_us: int
) -> OverviewRows:
    """Totals, stop reasons and per-bucket aggregates of the runs matching `filters`."""
    where = runs_common_where(filters)
    cur.execute(f"SELECT {_AGGREGATES} FROM runs WHERE {where.sql()}", where.params)
    totals = _dicts(cur)[0]

    cur.execute(
        f"SELECT stop_reason, count(*) AS n FROM runs WHERE {where.sql()} GROUP BY stop_reason ORDER BY n DESC, stop_reason",
        where.params,
    )
    stop_reasons = [(r[0], int(r[1])) for r in cur.fetchall()]

    cur.execute(
        f"SELECT (epoch_us(start_time) - epoch_us(?::TIMESTAMP)) // ? AS bucket, {_AGGREGATES} "
        f"FROM runs WHERE {where.sql()} AND start_time IS NOT NULL GROUP BY bucket ORDER BY bucket",
        [origin, bucket_us, *where.params],
    )
    buckets = {int(r.pop("bucket")): r for r in _dicts(cur)}
    return OverviewRows(totals=totals, stop_reasons=stop_reasons, buckets=buckets, handoffs=_handoffs(cur, where))


def _handoffs(cur: duckdb.DuckDBPyConnection, where: Any) -> list[tuple[str | None, str | None, int, int, dict[str, int]]]:
    """Runs and hand-offs (by reason) per agent version: the hand-off rate table of the overview."""
    cur.execute(
        f"SELECT agent, version, handoff_reason, count(*) FROM runs WHERE {where.sql()} "
        "GROUP BY agent, version, handoff_reason",
        where.params,
    )
    groups: dict[tuple[str | None, str | None], dict[str | None, int]] = {}
    for agent, version, reason, n in cur.fetchall():
        groups.setdefault((agent, version), {})[reason] = int(n)
    rows = [
        (agent, version, sum(counts.values()), sum(n for r, n in counts.items() if r is not None),
         {r: n for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))) if r is not None})
        for (agent, version), counts in groups.items()
    ]  # fmt: skip
    return sorted(rows, key=lambda r: (-r[2], r[0] or "\uffff", r[1] or "\uffff"))


def first_run_start(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> datetime | None:
    """Earliest run start under the filters: the range start when the caller gives no `since`."""
    where = runs_common_where(filters)
    cur.execute(f"SELECT min(start_time) FROM runs WHERE {where.sql()}", where.params)
    row = cur.fetchone()
    return None if row is None else row[0]
