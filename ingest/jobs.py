"""The singleton jobs of a server: the alert evaluator, the annotation queue filler, the online
evaluators and retention, built once and started by one lifespan.

Why one object: these jobs must run in exactly one process of a deployment (two alert evaluators
would notify twice, two queue fillers would race for the same runs). In the one-process server
(`--role all`) they run beside the query API; in a split deployment only the `worker` node starts
them, while `api` nodes still hold the same objects to list the rules and their state. /readyz
reports which of them are running in this process (`running()`), which is how an operator (and the
tests) tell that a deployment has exactly one of each.

Retention is swept by the store's own writer every `retention_interval_s` (DuckDB and ClickHouse
alike; on ClickHouse each table's TTL also ages rows out on merges). Nodes without the jobs (ingest,
api) get a store whose writer never sweeps (`store_settings`), so it is reported here, where it
runs.

The alert service, the queue filler and the evaluators run on either store (their SQL is the
store's own: the `alerts` query module, ingest/store/work.py); only a node with the jobs records
alert evaluations and notifies (AlertService `records`). A job whose start fails with an
IngestError is logged and listed the same way, so the others still run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import APIRouter, FastAPI

from ingest.alerts.service import AlertService
from ingest.config import Settings
from ingest.errors import IngestError
from ingest.evaluators.service import EvaluatorService
from ingest.queues.service import QueueFiller
from ingest.roles import plan_for

log = logging.getLogger(__name__)
NEVER = 10 * 365 * 86400  # seconds: a sweep interval that never comes due (finite: it may be waited on)


@dataclass
class SingletonJobs:
    alerts: AlertService | None  # None: this store cannot run it (see `unavailable`)
    queue_filler: QueueFiller | None
    evaluators: EvaluatorService | None
    sweeps_retention: bool  # this process's store deletes expired rows (retention_days > 0)
    started: bool = False
    unavailable: dict[str, str] = field(default_factory=dict)  # job -> why it does not run here

    def start(self, http_url: str | None = None) -> None:
        """In the order the routers' lifespans started them before there were roles."""
        if self.alerts is not None:
            self._start_one("alerts", self.alerts.start)
        if self.queue_filler is not None:
            self._start_one("queue_fill", self.queue_filler.start)
        if self.evaluators is not None:
            evaluators = self.evaluators
            self._start_one("evaluators", lambda: evaluators.start(http_url))
        self.started = True

    def _start_one(self, name: str, start: Callable[[], None]) -> None:
        try:
            start()
        except IngestError as exc:  # e.g. NotAvailable: this store cannot run the job yet
            self.unavailable[name] = exc.message
            log.warning("%s does not run on this store: %s", name, exc.message)

    def stop(self) -> None:
        self.started = False
        for job in (self.evaluators, self.queue_filler, self.alerts):
            if job is not None:
                job.stop()

    def running(self) -> list[str]:
        """The jobs whose threads are alive in this process (a job with nothing to do has none:
        the alert thread needs rules, the evaluator thread an enabled rule)."""
        names = []
        if self.alerts is not None and self.alerts.running:
            names.append("alerts")
        if self.evaluators is not None and self.evaluators.running:
            names.append("evaluators")
        if self.queue_filler is not None and self.queue_filler.running:
            names.append("queue_fill")
        if self.started and self.sweeps_retention:
            names.append("retention")  # the store's writer sweeps (store_settings keeps it to these nodes)
        return names


def store_settings(settings: Settings) -> Settings:
    """The settings the store of this node is opened with: on a node without the singleton jobs
    (ingest, api) the writer's periodic retention sweep never comes due. `retention_days` is kept: it
    is also the ClickHouse TTL every node sets at start, which must agree across nodes."""
    if plan_for(settings.role).jobs:
        return settings
    return settings.model_copy(update={"retention_interval_s": NEVER})


def _evaluators(settings: Settings, store: object) -> EvaluatorService:
    return EvaluatorService(
        store, settings.evaluators, settings=settings, concurrency=settings.evaluator_concurrency,
        poll_interval_s=settings.evaluator_poll_interval_s,
    )


def build_jobs(settings: Settings, store: object) -> SingletonJobs:
    from ingest.alerts.defaults import effective_rules

    # what the store was really opened with (store_settings), not what the node was asked for
    opened = getattr(store, "settings", settings)
    sweeps = opened.retention_days > 0 and opened.retention_interval_s < NEVER
    rules, builtin = effective_rules(settings.alerts, settings.alerts_defaults, [k.project for k in settings.api_keys])
    return SingletonJobs(
        # only a node with the jobs records evaluations and notifies (an api node checks without recording)
        alerts=AlertService(store, rules, settings.alert_channels, builtin=builtin, records=plan_for(settings.role).jobs),
        queue_filler=QueueFiller(store, settings.queue_fill_interval_s, settings.queues),
        evaluators=_evaluators(settings, store),
        sweeps_retention=sweeps,
    )


def jobs_router(jobs: SingletonJobs, run: bool) -> APIRouter:
    """A router without routes whose lifespan publishes `jobs` on app.state (for /readyz) and, with
    `run`, starts them once the app is up and stops them when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.jobs = jobs
        if run:
            await asyncio.to_thread(jobs.start, getattr(app.state, "http_url", None))
        try:
            yield
        finally:
            if run:
                await asyncio.to_thread(jobs.stop)

    return APIRouter(lifespan=lifespan)
