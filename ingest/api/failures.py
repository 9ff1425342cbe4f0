"""`GET /api/failures`: failed runs clustered by stop reason and failure signature, with trends.

The trend buckets follow the range like the overview's (ingest/api/overview.py) so the sparkline of
a cluster lines up with the overview chart; empty buckets are zeros, not gaps.
"""

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ingest.api.access import ReadAccess
from ingest.api.analytics_models import FailureCluster, Failures, TrendPoint
from ingest.api.analytics_params import FailuresParams
from ingest.api.execute import ReadableStore, run_read
from ingest.api.overview import DEFAULT_RANGE, _align, choose_bucket
from ingest.store.backend import queries_of


def add_failure_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/failures", response_model=Failures, summary="Failed runs clustered by stop reason and signature")
    def get_failures(
        params: Annotated[FailuresParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Failures:
        until = params.until or datetime.now(UTC).replace(tzinfo=None)
        filters = params.to_filters(access, until=until)

        def query(cur: Any) -> tuple[datetime, timedelta, Any]:
            since = params.since or queries_of(store).failures.first_failure_start(cur, filters) or (until - DEFAULT_RANGE)
            bucket = choose_bucket(max(until - since, timedelta(seconds=1)))
            origin = _align(since, bucket)
            rows = queries_of(store).failures.failure_clusters(
                cur, replace(filters, since=since), origin, bucket // timedelta(microseconds=1), params.limit
            )
            return origin, bucket, rows

        origin, bucket, rows = run_read(store, query, timeout_s)
        count = max(1, -(-(until - origin) // bucket))
        clusters = []
        for c in rows.clusters:
            counts = rows.trend.get((c["stop_reason"], c["signature"]), {})
            trend = [
                TrendPoint(bucket=(origin + i * bucket).replace(tzinfo=UTC), count=counts.get(i, 0))
                for i in range(count)
            ]
            clusters.append(
                FailureCluster(
                    **{k: v for k, v in c.items() if k != "examples"},
                    share=c["count"] / rows.total_failed,
                    examples=list(c["examples"] or []),
                    trend=trend,
                )
            )
        return Failures(
            total_failed=rows.total_failed,
            clusters=clusters,
            bucket_seconds=int(bucket.total_seconds()),
            since=origin.replace(tzinfo=UTC),
            until=until.replace(tzinfo=UTC),
        )
