"""`/api/evaluators`: the online evaluator rules with their recent results, and backfills.

- `GET /api/evaluators` (scope `read`): every rule that applies to the caller's projects (a rule
  naming no project applies to all), with counts since `since` (evaluated, passed, failed, errors,
  the judge's cost: evaluation cost, never added to the agents') and its latest outcomes, each
  naming the run (`trace_id`) and, for a judge, the judge's own runs. Counts and outcomes are of the
  caller's projects only.
- `POST /api/evaluators/{rule}/backfill` (scope `admin`): score the rule's runs since `since` in
  the caller's projects in the background (what `steplens eval backfill` calls); answers the job.
- `GET /api/evaluators/backfill/{job_id}` (scope `admin`): the job's progress.

The router's lifespan starts and stops the evaluator service, as the alerts router does for alerts.
No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import TimeParam
from ingest.auth import Principal, require_scope
from ingest.evaluators import state
from ingest.evaluators.rules import EvaluatorRule, eval_run_id
from ingest.evaluators.service import BackfillJob, EvaluatorService
from ingest.store.work import work_of

DEFAULT_WINDOW = timedelta(hours=24)


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None else None


class OutcomeOut(BaseModel):
    project: str
    trace_id: str = Field(description="The judged run: GET /api/traces/{trace_id}.")
    status: str = Field(description="done (a score was written) or error (why in `reason`).")
    value: bool | float | str | None
    passed: bool | None
    reason: str | None
    attempts: int
    cost_usd: float | None = Field(description="The judge's own cost for this run (evaluation cost).")
    judge_trace_ids: list[str] = Field(description="The judge's runs (mode eval); the last one gave the score.")
    score_id: str | None
    evaluated_at: datetime | None

    @classmethod
    def of(cls, o: state.Outcome, score_type: str) -> "OutcomeOut":
        if o.status != state.DONE:
            value = None
        elif score_type == "boolean":
            value = bool(o.value_numeric)
        elif score_type == "numeric":
            value = o.value_numeric
        else:
            value = o.value_label
        return cls(project=o.project, trace_id=o.trace_id, status=o.status, value=value, passed=o.passed,
                   reason=o.reason, attempts=o.attempts, cost_usd=o.cost_usd, judge_trace_ids=o.judge_trace_ids,
                   score_id=o.score_id, evaluated_at=_utc(o.evaluated_at))


class SummaryOut(BaseModel):
    evaluated: int = Field(description="Runs scored (status done).")
    passed: int
    failed: int
    errors: int = Field(description="Evaluations that gave no score (reason on each outcome).")
    cost_usd: float = Field(description="The judge's cost over these evaluations (evaluation cost).")
    last_evaluated: datetime | None


class EvaluatorOut(BaseModel):
    rule: dict[str, Any]
    judge_eval_run_id: str | None = Field(description="`eval_run_id` of the judge's runs: GET /api/runs?eval_run_id=.")
    summary: SummaryOut
    recent: list[OutcomeOut]
    last_pass: datetime | None
    last_error: str | None


class EvaluatorsOut(BaseModel):
    since: datetime
    evaluators: list[EvaluatorOut]


class BackfillIn(BaseModel):
    since: TimeParam = Field(None, description="Runs starting at or after: ISO 8601 or relative (7d); default all.")


class BackfillOut(BaseModel):
    job_id: str
    rule: str
    since: datetime | None
    total: int = Field(description="Runs to score when the job started (matched, sampled, not scored yet).")
    done: int
    errors: int
    finished: bool
    error: str | None

    @classmethod
    def of(cls, job: BackfillJob) -> "BackfillOut":
        return cls(job_id=job.job_id, rule=job.rule, since=_utc(job.since), total=job.total, done=job.done,
                   errors=job.errors, finished=job.finished, error=job.error)


def rule_view(rule: EvaluatorRule) -> dict[str, Any]:
    data = rule.model_dump(mode="json", by_alias=True)
    data["delay"] = rule.delay.total_seconds()
    data["lookback"] = rule.lookback.total_seconds()
    if rule.is_judge:
        data["evaluator"].pop("prompt", None)  # long; the README documents the default
    return data


def visible(rule: EvaluatorRule, projects: frozenset[str] | None) -> bool:
    """A rule is the caller's when it applies to one of the caller's projects."""
    return projects is None or rule.project is None or rule.project in projects


def _principal_projects(principal: Principal) -> frozenset[str] | None:
    return None if principal.projects is None else frozenset(principal.projects)


def build_evaluators_router(
    service: EvaluatorService, store: ReadableStore, read_access: Callable[..., Any] | None = None,
    timeout_s: float | None = None, run_service: bool = True,
) -> APIRouter:
    """Mount under /api. With `run_service`, the app's lifespan starts and stops `service`."""
    read_access = read_access or principal_read_access()
    work = work_of(store)  # the store's own SQL for the evaluations table

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_service:
            await asyncio.to_thread(service.start, getattr(app.state, "http_url", None))
        try:
            yield
        finally:
            if run_service:
                await asyncio.to_thread(service.stop)

    router = APIRouter(tags=["evaluators"], lifespan=lifespan)

    @router.get("/evaluators", response_model=EvaluatorsOut, summary="Evaluator rules with their recent results")
    def get_evaluators(
        access: Annotated[ReadAccess, Depends(read_access)],
        since: Annotated[TimeParam, Query(description="Results since (default 24h).")] = None,
        project: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=0, le=1000, description="Latest outcomes per rule.")] = 20,
    ) -> EvaluatorsOut:
        projects = access.narrow(project)
        start = since or datetime.now(UTC).replace(tzinfo=None) - DEFAULT_WINDOW
        rules = [r for r in service.rules if visible(r, projects)]

        def read(cur: Any) -> tuple[dict[str, state.RuleSummary], dict[str, list[state.Outcome]]]:
            sums = work.evaluations.summaries(cur, projects, start)
            latest = {r.name: work.evaluations.recent(cur, r.name, projects, limit, start) if limit else []
                      for r in rules}
            return sums, latest

        sums, latest = run_read(store, read, timeout_s)
        out = []
        for rule in rules:
            s = sums.get(rule.name, state.RuleSummary())
            status = service.status.get(rule.name)
            out.append(EvaluatorOut(
                rule=rule_view(rule), judge_eval_run_id=eval_run_id(rule.name) if rule.is_judge else None,
                summary=SummaryOut(evaluated=s.evaluated, passed=s.passed, failed=s.failed, errors=s.errors,
                                   cost_usd=s.cost_usd, last_evaluated=_utc(s.last_evaluated)),
                recent=[OutcomeOut.of(o, rule.score.type) for o in latest.get(rule.name, [])],
                last_pass=_utc(status.last_pass) if status else None, last_error=status.last_error if status else None,
            ))
        return EvaluatorsOut(since=start.replace(tzinfo=UTC), evaluators=out)

    @router.post("/evaluators/{rule}/backfill", response_model=BackfillOut, status_code=202,
                 summary="Score the rule's past runs in the background (admin)")
    def post_backfill(rule: str, principal: Annotated[Principal, Depends(require_scope("admin"))],
                      body: BackfillIn | None = None) -> BackfillOut:
        projects = _principal_projects(principal)
        found = service.rule(rule)
        if found is None or not visible(found, projects):
            raise HTTPException(404, f"no evaluator rule {rule!r} applies to this key's project")
        if not found.enabled:
            raise HTTPException(409, f"evaluator rule {rule!r} is disabled (enabled = false)")
        try:
            job = service.start_backfill(found, (body or BackfillIn()).since, projects)
        except Exception as exc:  # the store cannot be read right now
            raise HTTPException(503, f"backfill could not start: {type(exc).__name__}: {exc}",
                                headers={"Retry-After": "1"}) from exc
        return BackfillOut.of(job)

    @router.get("/evaluators/backfill/{job_id}", response_model=BackfillOut, summary="A backfill's progress (admin)")
    def get_backfill(job_id: str, principal: Annotated[Principal, Depends(require_scope("admin"))]) -> BackfillOut:
        job = service.jobs.get(job_id)
        projects = _principal_projects(principal)
        if job is None or not (projects is None or (job.projects is not None and job.projects <= projects)):
            raise HTTPException(404, f"no backfill {job_id!r} of this key's project")
        return BackfillOut.of(job)

    return router
