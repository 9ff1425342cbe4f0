"""The singleton jobs of a server: the alert evaluator, the annotation queue filler and the online
evaluators, built once and started by one lifespan.

Why one object: these jobs must run in exactly one process of a deployment (two alert evaluators
would notify twice, two queue fillers would race for the same runs). In the one-process server
(`--role all`) they run beside the query API; in a split deployment only the `worker` node starts
them, while `api` nodes still hold the same objects to list the rules and their state. /readyz
reports which of them are running in this process (`running()`), which is how an operator (and the
tests) tell that a deployment has exactly one of each.

Retention is a singleton too: on DuckDB it is part of the writer thread (ingest/store/writer.py), so
it is reported here whenever this process runs a store that sweeps (`retention_days` > 0).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI

from ingest.alerts.service import AlertService
from ingest.config import Settings
from ingest.evaluators.service import EvaluatorService
from ingest.queues.service import QueueFiller


@dataclass
class SingletonJobs:
    alerts: AlertService
    queue_filler: QueueFiller
    evaluators: EvaluatorService
    sweeps_retention: bool  # this process's store deletes expired rows (retention_days > 0)
    started: bool = False

    def start(self, http_url: str | None = None) -> None:
        """In the order the routers' lifespans started them before there were roles."""
        self.alerts.start()
        self.queue_filler.start()
        self.evaluators.start(http_url)
        self.started = True

    def stop(self) -> None:
        self.started = False
        self.evaluators.stop()
        self.queue_filler.stop()
        self.alerts.stop()

    def running(self) -> list[str]:
        """The jobs whose threads are alive in this process (a job with nothing to do has none:
        the alert thread needs rules, the evaluator thread an enabled rule)."""
        names = []
        if self.alerts.running:
            names.append("alerts")
        if self.evaluators.running:
            names.append("evaluators")
        if self.queue_filler.running:
            names.append("queue_fill")
        if self.started and self.sweeps_retention:
            names.append("retention")
        return names


def build_jobs(settings: Settings, store: object) -> SingletonJobs:
    from ingest.alerts.defaults import effective_rules

    rules, builtin = effective_rules(settings.alerts, settings.alerts_defaults, [k.project for k in settings.api_keys])
    return SingletonJobs(
        alerts=AlertService(store, rules, settings.alert_channels, builtin=builtin),
        queue_filler=QueueFiller(store, settings.queue_fill_interval_s, settings.queues),
        evaluators=EvaluatorService(
            store, settings.evaluators, settings=settings, concurrency=settings.evaluator_concurrency,
            poll_interval_s=settings.evaluator_poll_interval_s,
        ),
        sweeps_retention=settings.retention_days > 0,
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
