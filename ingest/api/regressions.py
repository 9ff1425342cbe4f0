"""`GET /api/regressions`: what changed, and whether it is a real shift or noise.

comparison=window (last `window` vs the `baseline` before it), release (agent version vs version)
or drift (CUSUM of mean steps per run, or of each score metric named in `metrics`, over since..until),
or cohort (a gray release's candidate cohort vs its stable cohort over the same since..until).
Score metrics (`score:NAME`, `score:NAME=LABEL`, `score:*`) are metrics like the others (design.md §4).
Flagged findings come first.
No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` hints.
"""

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field, field_validator

from ingest.analytics.compare import cohort_report, drift_report, release_report, window_report
from ingest.analytics.drift import DEFAULT_H, DEFAULT_K, DriftConfig, DriftResult
from ingest.analytics.durations import parse_duration
from ingest.analytics.findings import DEFAULT_ALPHA, Finding, RegressionConfig
from ingest.analytics.metrics import drift_metric, metric_by_key
from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import CommonParams, TimeParam
from ingest.store.backend import queries_of

DEFAULT_DRIFT_RANGE = timedelta(days=28)
DEFAULT_COHORT_RANGE = timedelta(days=7)


class RegressionsParams(CommonParams):
    comparison: Literal["window", "release", "drift", "cohort"] = "window"
    at: TimeParam = Field(None, description="Evaluate as of this time (default now); window/drift end here.")
    window: str = Field("24h", description="window: the current period, e.g. 24h.")
    baseline: str = Field("7d", description="window: the baseline period right before it, e.g. 7d.")
    baseline_version: str | None = Field(None, max_length=512, description="release: default the previous version.")
    current_version: str | None = Field(None, max_length=512, description="release: default the newest version.")
    release: str | None = Field(
        None, max_length=512, description="cohort: the gray release to compare (default every release in range).")
    metrics: str | None = Field(
        None, max_length=2000,
        description="Comma-separated metric keys (default all); score:NAME, score:NAME=LABEL, score:* for scores. "
        "drift: the metrics to chart, steps (default) or scores.",
    )
    min_relative_change: float = Field(0.10, ge=0)
    alpha: float = Field(DEFAULT_ALPHA, gt=0, lt=1)
    min_samples: int = Field(30, ge=2, le=1_000_000)
    bucket: str = Field("1d", description="drift: bucket length.")
    reference_buckets: int = Field(7, ge=2, le=10_000)
    k: float = Field(DEFAULT_K, ge=0)
    h: float = Field(DEFAULT_H, gt=0)

    @field_validator("window", "baseline", "bucket")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration(v)
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: str | None) -> str | None:
        if v is not None:
            for key in v.split(","):
                metric_by_key(key.strip())
        return v


class RegressionsResponse(BaseModel):
    comparison: str
    generated_at: datetime
    flagged: int
    findings: list[Finding] = Field(default_factory=list, description="window and release comparisons")
    drift: list[DriftResult] = Field(default_factory=list, description="drift comparison")


# Most drift buckets one request may ask for: each is a Python object per agent, so `bucket=1s`
# over years would hold a worker for hours (the SQL time limit does not cover it).
MAX_DRIFT_BUCKETS = 10_000


def _check_drift_buckets(params: RegressionsParams, now: datetime) -> None:
    until = params.until or now
    since = params.since or until - DEFAULT_DRIFT_RANGE
    buckets = (until - since) / parse_duration(params.bucket)
    if buckets > MAX_DRIFT_BUCKETS:
        raise HTTPException(
            422,
            f"bucket={params.bucket} over since..until makes {buckets:.0f} buckets, more than {MAX_DRIFT_BUCKETS}: "
            "use a longer bucket or a shorter range",
        )


def add_regression_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/regressions", response_model=RegressionsResponse, summary="Regressions: flagged findings first")
    def get_regressions(
        params: Annotated[RegressionsParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> RegressionsResponse:
        if params.comparison == "release" and params.version is not None:
            raise HTTPException(400, "comparison=release compares versions: use baseline_version/current_version")
        if params.comparison == "cohort" and params.version is not None:
            raise HTTPException(400, "comparison=cohort compares a release's two versions: drop version, use release")
        now = params.at or datetime.now(UTC).replace(tzinfo=None)
        filters = params.to_filters(access)
        drift_metrics = ["steps"]
        if params.comparison == "drift":
            _check_drift_buckets(params, now)
            if params.metrics:
                drift_metrics = [m.strip() for m in params.metrics.split(",")]
                for key in drift_metrics:
                    try:
                        drift_metric(key)
                    except ValueError as exc:
                        raise HTTPException(422, str(exc)) from exc
        config = RegressionConfig(
            min_relative_change=params.min_relative_change, alpha=params.alpha, min_samples=params.min_samples,
            metrics=[m.strip() for m in params.metrics.split(",")] if params.metrics else None,
        )

        queries = queries_of(store)  # the store's own input SQL; the statistics are shared

        def query(cur: Any) -> RegressionsResponse:
            if params.comparison == "drift":
                until = params.until or now
                since = params.since or until - DEFAULT_DRIFT_RANGE
                drift = DriftConfig(bucket=params.bucket, reference_buckets=params.reference_buckets, k=params.k,
                                    h=params.h)
                results = [r for key in drift_metrics for r in drift_report(cur, filters, since, until, drift, key,
                                                                               queries)]
                results.sort(key=lambda r: not r.flagged)
                return RegressionsResponse(comparison="drift", generated_at=now,
                                           flagged=sum(r.flagged for r in results), drift=results)
            if params.comparison == "window":
                report = window_report(cur, replace(filters, since=None, until=None), params.until or now,
                                       params.window, params.baseline, config, queries)
            elif params.comparison == "cohort":
                until = params.until or now
                since = params.since or until - DEFAULT_COHORT_RANGE
                report = cohort_report(cur, replace(filters, since=since, until=until), now, params.release, config,
                                       queries)
            else:
                report = release_report(cur, filters, now, params.baseline_version, params.current_version, config,
                                        queries)
            return RegressionsResponse(comparison=report.comparison, generated_at=now, flagged=report.flagged,
                                       findings=report.findings)

        response = run_read(store, query, timeout_s)
        response.generated_at = response.generated_at.replace(tzinfo=UTC)
        return response


def build_regressions_router(
    store: ReadableStore, read_access: Callable[..., Any] | None = None, timeout_s: float | None = None
) -> APIRouter:
    """`/regressions` on its own router (mounted under /api by `ingest.server.query_routers`)."""
    router = APIRouter(tags=["regressions"])
    add_regression_routes(router, store, read_access or principal_read_access(), timeout_s)
    return router
