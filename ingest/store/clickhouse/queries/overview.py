"""ClickHouse form of `ingest.queries.overview`: totals, stop-reason mix, time series, hand-offs.

p50/p95 use `quantileExactInclusive`, the linear interpolation of DuckDB's `quantile_cont`, so the
overview's figures are the same numbers on both stores. Buckets are numbered from `origin` in
epoch microseconds, as in DuckDB.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.filters import CommonFilters, Where
from ingest.queries.overview import OverviewRows
from ingest.store.clickhouse.queries._common import RUNS, dicts, null_if_empty, runs_common_where

__all__ = ["OverviewRows", "first_run_start", "overview"]

_AGGREGATES = f"""
    count() AS runs,
    countIf(ok) AS ok_runs,
    countIf(NOT ok) AS failed_runs,
    {null_if_empty("quantileExactInclusive(0.5)(duration_ms)", "duration_ms")} AS p50_duration_ms,
    {null_if_empty("quantileExactInclusive(0.95)(duration_ms)", "duration_ms")} AS p95_duration_ms,
    {null_if_empty("avg(steps)", "steps")} AS mean_steps,
    toInt64(ifNull(sum(input_tokens), 0)) AS input_tokens,
    toInt64(ifNull(sum(output_tokens), 0)) AS output_tokens,
    toFloat64(ifNull(sum(cost_usd), 0.0)) AS cost_usd,
    toInt64(ifNull(sum(llm_calls), 0)) AS llm_calls,
    toInt64(ifNull(sum(tool_calls), 0)) AS tool_calls,
    toInt64(ifNull(sum(tool_errors), 0)) AS tool_errors,
    countIf(handoff_reason IS NOT NULL) AS handoff_runs
"""


def overview(cur: Any, filters: CommonFilters, origin: datetime, bucket_us: int) -> OverviewRows:
    """Totals, stop reasons and per-bucket aggregates of the runs matching `filters`."""
    where = runs_common_where(filters)
    cur.execute(f"SELECT {_AGGREGATES} FROM {RUNS} WHERE {where.sql()}", where.params)
    totals = dicts(cur)[0]

    cur.execute(
        f"SELECT stop_reason, count() AS n FROM {RUNS} WHERE {where.sql()} GROUP BY stop_reason "
        "ORDER BY n DESC, stop_reason NULLS LAST",
        where.params,
    )
    stop_reasons = [(r[0], int(r[1])) for r in cur.fetchall()]

    cur.execute(
        f"SELECT intDiv(toUnixTimestamp64Micro(start_time) - toUnixTimestamp64Micro(?), ?) AS bucket, {_AGGREGATES} "
        f"FROM {RUNS} WHERE {where.sql()} AND start_time IS NOT NULL GROUP BY bucket ORDER BY bucket",
        [origin, bucket_us, *where.params],
    )
    buckets = {int(r.pop("bucket")): r for r in dicts(cur)}
    return OverviewRows(totals=totals, stop_reasons=stop_reasons, buckets=buckets, handoffs=_handoffs(cur, where))


def _handoffs(cur: Any, where: Where) -> list[tuple[str | None, str | None, int, int, dict[str, int]]]:
    """Runs and hand-offs (by reason) per agent version, ordered as DuckDB's module orders them."""
    cur.execute(
        f"SELECT agent, version, handoff_reason, count() FROM {RUNS} WHERE {where.sql()} "
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


def first_run_start(cur: Any, filters: CommonFilters) -> datetime | None:
    """Earliest run start under the filters (None when no run matches, as DuckDB's min of nothing)."""
    where = runs_common_where(filters)
    cur.execute(f"SELECT min(start_time), count(start_time) FROM {RUNS} WHERE {where.sql()}", where.params)
    row = cur.fetchone()
    return None if row is None or not row[1] else row[0]
