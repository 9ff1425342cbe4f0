"""ClickHouse form of `ingest.queries.failures`: failed runs grouped by stop reason, then by
failure signature, with per-bucket counts; all from the runs table (read `FINAL`).

`max_by(trace_id, start_time, 3)` of DuckDB is the 3 trace ids of the latest starts: here the
(start, trace id) pairs sorted descending and cut to 3.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.failures import EXAMPLES, FailureRows
from ingest.queries.filters import CommonFilters
from ingest.store.clickhouse.queries._common import RUNS, dicts, runs_common_where

__all__ = ["FailureRows", "failure_clusters", "first_failure_start"]

_SIGNATURE = "coalesce(failure_signature, stop_reason, 'unknown')"


def failure_clusters(cur: Any, filters: CommonFilters, origin: datetime, bucket_us: int, limit: int) -> FailureRows:
    """The `limit` largest clusters of failed runs under `filters`, with per-bucket counts."""
    where = runs_common_where(filters)
    where.add("ok = false")
    cur.execute(f"SELECT count() FROM {RUNS} WHERE {where.sql()}", where.params)
    total = int(cur.fetchall()[0][0])
    if not total:
        return FailureRows(0, [], {})
    cur.execute(
        f"""
        SELECT stop_reason, {_SIGNATURE} AS signature,
            any(last_error_kind) AS span_kind, any(last_error_tool) AS tool,
            any(last_error_type) AS error_type, any(last_error_template) AS message_template,
            count() AS count, min(start_time) AS first_seen, max(start_time) AS last_seen,
            arraySort(groupUniqArray(version)) AS versions,
            arraySort(groupUniqArray(agent)) AS agents,
            arrayMap(x -> x.2, arraySlice(arrayReverseSort(
                groupArrayIf((assumeNotNull(start_time), trace_id), start_time IS NOT NULL)), 1, {EXAMPLES})) AS examples
        FROM {RUNS} WHERE {where.sql()}
        GROUP BY stop_reason, signature
        ORDER BY count DESC, stop_reason NULLS LAST, signature
        LIMIT ?
        """,
        [*where.params, limit],
    )
    clusters = dicts(cur)
    for c in clusters:
        c["count"] = int(c["count"])
    keep = {(c["stop_reason"], c["signature"]) for c in clusters}

    cur.execute(
        f"""
        SELECT stop_reason, {_SIGNATURE} AS signature,
            intDiv(toUnixTimestamp64Micro(start_time) - toUnixTimestamp64Micro(?), ?) AS bucket, count() AS n
        FROM {RUNS} WHERE {where.sql()} AND start_time IS NOT NULL
        GROUP BY stop_reason, signature, bucket
        """,
        [origin, bucket_us, *where.params],
    )
    trend: dict[tuple[str | None, str], dict[int, int]] = {}
    for stop_reason, signature, bucket, n in cur.fetchall():
        if (stop_reason, signature) in keep:
            trend.setdefault((stop_reason, signature), {})[int(bucket)] = int(n)
    return FailureRows(total, clusters, trend)


def first_failure_start(cur: Any, filters: CommonFilters) -> datetime | None:
    """Earliest failed run under the filters (None when there is none)."""
    where = runs_common_where(filters)
    where.add("ok = false")
    cur.execute(f"SELECT min(start_time), count(start_time) FROM {RUNS} WHERE {where.sql()}", where.params)
    row = cur.fetchone()
    return None if row is None or not row[1] else row[0]
