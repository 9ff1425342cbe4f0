"""`GET /api/overview`: totals, stop-reason mix and a time series whose bucket follows the range.

Bucket sizes keep a chart readable (roughly 30-300 points): 5 min for 6 h, 1 h for 7 d, 1 d from
30 d. Buckets are aligned to multiples of their size since the Unix epoch (a day bucket starts at
UTC midnight) and empty ones are filled with zeros so a chart shows gaps as zero, not as a line
drawn across them.
"""

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.json_answer import model_response
from ingest.api.models import Aggregates, Bucket, HandoffRate, Overview, StopReasonCount
from ingest.api.params import OverviewParams
from ingest.store.backend import queries_of

_EPOCH = datetime(1970, 1, 1)
DEFAULT_RANGE = timedelta(hours=24)
MAX_BUCKETS = 2000
# (largest range, bucket) in increasing order; beyond the last, weekly buckets.
BUCKET_TABLE: list[tuple[timedelta, timedelta]] = [
    (timedelta(hours=1), timedelta(minutes=1)),
    (timedelta(hours=6), timedelta(minutes=5)),
    (timedelta(hours=24), timedelta(minutes=15)),
    (timedelta(days=7), timedelta(hours=1)),
    (timedelta(days=30) - timedelta(microseconds=1), timedelta(hours=6)),
    (timedelta(days=365), timedelta(days=1)),
]


def choose_bucket(span: timedelta) -> timedelta:
    """Bucket size for a range length (see module docstring)."""
    for limit, bucket in BUCKET_TABLE:
        if span <= limit:
            return bucket
    bucket = timedelta(days=7)
    if span / bucket > MAX_BUCKETS:
        bucket = timedelta(days=-(-span.days // MAX_BUCKETS))
    return bucket


def _align(ts: datetime, bucket: timedelta) -> datetime:
    return _EPOCH + ((ts - _EPOCH) // bucket) * bucket


def _aggregates(row: dict[str, Any]) -> dict[str, Any]:
    rated = (row.get("ok_runs") or 0) + (row.get("failed_runs") or 0)
    out = {k: v for k, v in row.items() if v is not None}
    out["success_rate"] = (row["ok_runs"] / rated) if rated else None
    runs = row.get("runs") or 0
    out["handoff_rate"] = (row.get("handoff_runs") or 0) / runs if runs else None
    return out


def add_overview_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/overview", response_model=Overview, summary="Run totals, stop reasons and a time series")
    def get_overview(
        params: Annotated[OverviewParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Response:
        until = params.until or datetime.now(UTC).replace(tzinfo=None)
        filters = params.to_filters(access, until=until)

        def query(cur: Any) -> tuple[datetime, timedelta, Any, list[dict[str, Any]]]:
            since = params.since or queries_of(store).overview.first_run_start(cur, filters) or (until - DEFAULT_RANGE)
            bucket = choose_bucket(max(until - since, timedelta(seconds=1)))
            origin = _align(since, bucket)
            bucket_us = bucket // timedelta(microseconds=1)
            scoped = replace(filters, since=since)
            return origin, bucket, queries_of(store).overview.overview(cur, scoped, origin, bucket_us), queries_of(store).scores.score_aggregates(cur, scoped)

        origin, bucket, rows, scores = run_read(store, query, timeout_s)
        count = max(1, -(-(until - origin) // bucket))
        series = []
        for i in range(count):
            start = origin + i * bucket
            series.append(
                Bucket(
                    start=start.replace(tzinfo=UTC),
                    end=(start + bucket).replace(tzinfo=UTC),
                    **_aggregates(rows.buckets.get(i, {"ok_runs": 0, "failed_runs": 0})),
                )
            )
        # serialized in the route's thread: no second hop to validate it again (ingest/api/json_answer.py)
        return model_response(Overview(
            since=params.since.replace(tzinfo=UTC) if params.since else origin.replace(tzinfo=UTC),
            until=until.replace(tzinfo=UTC),
            bucket_seconds=int(bucket.total_seconds()),
            totals=Aggregates(**_aggregates(rows.totals)),
            stop_reasons=[StopReasonCount(stop_reason=s, runs=n) for s, n in rows.stop_reasons],
            series=series,
            handoffs=[
                HandoffRate(agent=a, version=v, runs=n, handoff_runs=h, handoff_rate=h / n, reasons=reasons)
                for a, v, n, h, reasons in rows.handoffs
            ],
            scores=scores,
        ))
