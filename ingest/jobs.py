"""The singleton jobs of a server: the alert evaluator, the annotation queue filler and the online
evaluators, built once and started by one lifespan.

Why one object: these jobs must run in exactly one process of a deployment (two alert evaluators
would notify twice, two queue fillers would race for the same runs). In the one-process server
(`--role all`) they run beside the query API; in a split deployment only the `worker` node starts
them, while `api` nodes still hold the same objects to list the rules and their state. /readyz
reports which of them are running in this process (`running()`), which is how an operator (and the
tests) tell that a deployment has exactly one of each.

Retention is a singleton too. On DuckDB it is part of the writer thread (ingest/store/writer.py),
which only `all` runs. On ClickHouse each table's TTL ages rows out whenever ClickHouse merges, and
the worker (or `all`) also sweeps every `retention_interval_s` (`RetentionSweeper`), so expired rows
leave the answers on time whatever the merges do; ingest and api nodes never sweep.

A job the store cannot run yet (ClickHouse: the queue filler writes DuckDB tables) is logged and left
out, so the other jobs still run; /readyz shows what does.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import APIRouter, FastAPI

from ingest.alerts.service import AlertService
from ingest.config import Settings
from ingest.errors import IngestError
from ingest.evaluators.service import EvaluatorService
from ingest.queues.service import QueueFiller

log = logging.getLogger(__name__)


class RetentionSweeper:
    """Calls `store.sweep_retention()` every `interval_s` on its own thread, for a store whose writer
    does not sweep by itself (ClickHouse). A failed sweep is logged and tried at the next interval."""

    def __init__(self, sweep: Callable[[], int], interval_s: float) -> None:
        self._sweep = sweep
        self.interval_s = interval_s
        self.sweeps = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="steplens-retention", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                deleted = self._sweep()
                self.sweeps += 1
                log.info("retention sweep deleted %d span(s)", deleted)
            except Exception as exc:  # noqa: BLE001 - logged, retried next interval; never kills the job
                log.warning("retention sweep failed (retried in %.0f s): %s: %s", self.interval_s,
                            type(exc).__name__, exc)
            self._stop.wait(self.interval_s)


@dataclass
class SingletonJobs:
    alerts: AlertService
    queue_filler: QueueFiller
    evaluators: EvaluatorService
    sweeps_retention: bool  # this process's store deletes expired rows (retention_days > 0)
    sweeper: RetentionSweeper | None = None  # for a store whose writer does not sweep by itself
    started: bool = False
    unavailable: dict[str, str] = field(default_factory=dict)  # job -> why the store cannot run it

    def start(self, http_url: str | None = None) -> None:
        """In the order the routers' lifespans started them before there were roles."""
        self._start_one("alerts", self.alerts.start)
        self._start_one("queue_fill", self.queue_filler.start)
        self._start_one("evaluators", lambda: self.evaluators.start(http_url))
        if self.sweeper is not None:
            self.sweeper.start()
        self.started = True

    def _start_one(self, name: str, start: Callable[[], None]) -> None:
        try:
            start()
        except IngestError as exc:  # e.g. NotAvailable: this store cannot run the job yet
            self.unavailable[name] = exc.message
            log.warning("%s does not run on this store: %s", name, exc.message)

    def stop(self) -> None:
        self.started = False
        if self.sweeper is not None:
            self.sweeper.stop()
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
        if self.sweeper is not None:
            sweeping = self.sweeper.running
        else:  # DuckDB: the writer sweeps whenever this process runs it with retention on
            sweeping = self.started and self.sweeps_retention
        if sweeping:
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
        # DuckDB's writer sweeps on its own (ingest/store/writer.py); another store is swept from here
        sweeper=RetentionSweeper(store.sweep_retention, settings.retention_interval_s)  # type: ignore[attr-defined]
        if settings.retention_days > 0 and getattr(store, "name", "duckdb") != "duckdb" else None,
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
