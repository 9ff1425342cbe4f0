"""Failure clusters: failed runs grouped by stop reason, then by failure signature.

Everything comes from the runs table: the loader keeps each run's last error (kind, tool, type,
message template) and its `failure_signature` up to date as spans arrive, so clustering a week of
failures is a GROUP BY over runs rows, never a scan of the spans table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where

EXAMPLES = 3

# Rows written before the signature existed (or with a NULL stop reason) still get a key.
_SIGNATURE = "coalesce(failure_signature, stop_reason, 'unknown')"


@dataclass(frozen=True)
class FailureRows:
    total_failed: int
    clusters: list[dict[str, Any]]
    # (stop_reason, signature) -> {bucket index from origin: failed runs}
    trend: dict[tuple[str | None, str], dict[int, int]]


def failure_clusters(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, origin: datetime, bucket_us: int, limit: int
) -> FailureRows:
    """The `limit` largest clusters of failed runs under `filters`, with per-bucket counts."""
    where = runs_common_where(filters)
    where.add("ok = false")
    cur.execute(f"SELECT count(*) FROM runs WHERE {where.sql()}", where.params)
    total = int(cur.fetchall()[0][0])
    if not total:
        return FailureRows(0, [], {})
    cur.execute(
        f"""
        SELECT stop_reason, {_SIGNATURE} AS signature,
            any_value(last_error_kind) AS span_kind, any_value(last_error_tool) AS tool,
            any_value(last_error_type) AS error_type, any_value(last_error_template) AS message_template,
            count(*) AS count, min(start_time) AS first_seen, max(start_time) AS last_seen,
            coalesce(list_sort(list(DISTINCT version) FILTER (WHERE version IS NOT NULL)), []) AS versions,
            coalesce(list_sort(list(DISTINCT agent) FILTER (WHERE agent IS NOT NULL)), []) AS agents,
            max_by(trace_id, start_time, {EXAMPLES}) AS examples
        FROM runs WHERE {where.sql()}
        GROUP BY stop_reason, signature
        ORDER BY count DESC, stop_reason NULLS LAST, signature
        LIMIT ?
        """,
        [*where.params, limit],
    )
    names = [d[0] for d in cur.description]
    clusters = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    keep = {(c["stop_reason"], c["signature"]) for c in clusters}

    cur.execute(
        f"""
        SELECT stop_reason, {_SIGNATURE} AS signature,
            (epoch_us(start_time) - epoch_us(?::TIMESTAMP)) // ? AS bucket, count(*) AS n
        FROM runs WHERE {where.sql()} AND start_time IS NOT NULL
        GROUP BY stop_reason, signature, bucket
        """,
        [origin, bucket_us, *where.params],
    )
    trend: dict[tuple[str | None, str], dict[int, int]] = {}
    for stop_reason, signature, bucket, n in cur.fetchall():
        if (stop_reason, signature) in keep:
            trend.setdefault((stop_reason, signature), {})[int(bucket)] = int(n)
    return FailureRows(total, clusters, trend)


def first_failure_start(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> datetime | None:
    """Earliest failed run under the filters: where the trend starts when no `since` is given."""
    where = runs_common_where(filters)
    where.add("ok = false")
    cur.execute(f"SELECT min(start_time) FROM runs WHERE {where.sql()}", where.params)
    row = cur.fetchone()
    return None if row is None else row[0]
