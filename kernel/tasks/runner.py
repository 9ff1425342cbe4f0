"""The side that runs tasks: claim queued tasks up to a concurrency limit, run each agent, record
the outcome, deliver webhooks, and take over what a dead runner left behind.

One loop does all of it, every `poll_s` or as soon as a run ends:
- recover: running tasks whose runner is gone (`kernel.tasks.leases`) are re-queued when the caller
  marked them retryable (and attempts remain), else ended `interrupted` with the reason; either way
  a webhook fires when they end. Nothing accepted is dropped.
- cancel: running tasks someone flagged (`TaskQueue.cancel`, `steplens tasks cancel`, any process)
  have their run cancelled (asyncio cancellation); they end `cancelled` with the run's stop reason.
- claim and start runs while slots are free; renew the leases of what this runner holds.
- deliver webhooks of ended tasks, each in its own asyncio task: a receiver that is down retries
  on its own backoff and never holds a run slot or another task's webhook.

The run is traced like any run, and its run span carries `steplens.task.id`, `.queued_s` and
`.attempt` (`kernel.telemetry.run_labels`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from kernel import telemetry
from kernel.tasks.agents import UnknownAgent, resolve_agent
from kernel.tasks.leases import LIVE_IN_THIS_PROCESS, WorkerIdentity, orphan_reason
from kernel.tasks.model import Task, TaskResult, TaskStatus, WebhookStatus
from kernel.tasks.queue import TaskQueue, open_store
from kernel.tasks.store import TaskStore, TaskStoreError
from kernel.tasks.webhooks import WebhookPolicy, deliver
from tracer.conventions import StopReason

log = logging.getLogger(__name__)

# (event, task) for whoever watches the runner (the CLI worker prints them): claimed, ended,
# requeued, interrupted, webhook_delivered, webhook_failed.
EventHook = Callable[[str, Task], None]


def _result_of(run: Any) -> TaskResult:
    handoff = getattr(run, "handoff", None)
    return TaskResult(ok=bool(run.ok), stop_reason=str(getattr(run.stop_reason, "value", run.stop_reason)),
                      answer=run.answer, error=run.error, trace_id=run.trace_id, steps=len(run.steps),
                      duration_s=run.duration_s, cost_usd=run.cost_usd,
                      handoff_reason=str(handoff.reason.value) if handoff is not None else None,
                      handoff_target=handoff.target if handoff is not None else None)


class TaskRunner:
    """Runs the tasks of a store. `agents`: names -> an agent or a function building one (called per
    task); other references are imported (`kernel.tasks.agents`)."""

    def __init__(
        self,
        store: TaskQueue | TaskStore | str | Path,
        *,
        agents: Mapping[str, Any] | None = None,
        concurrency: int = 4,
        poll_s: float = 0.5,
        lease_s: float = 30.0,
        webhook: WebhookPolicy | None = None,
        max_deliveries: int = 16,
        grace_s: float = 10.0,
        on_event: EventHook | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if poll_s <= 0 or lease_s < 3 * poll_s:
            raise ValueError("poll_s must be > 0 and lease_s at least 3 x poll_s (the lease is renewed "
                             "every lease_s / 3, between polls)")
        self.store = store.store if isinstance(store, TaskQueue) else open_store(store)
        self.agents = dict(agents or {})
        self.concurrency = concurrency
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.webhook = webhook or WebhookPolicy()
        self.max_deliveries = max_deliveries
        self.grace_s = grace_s
        self.on_event = on_event
        self.identity = WorkerIdentity()
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._deliveries: dict[str, asyncio.Task[None]] = {}
        self._cancelling: set[str] = set()  # runs being cancelled by id
        self._stopping: set[str] = set()  # runs being cancelled because this runner stops
        self._wake = asyncio.Event()
        self._renewed = 0.0

    # ---- public API -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run tasks until `stop` is set (forever without one). On stop: claim nothing more, give
        running tasks `grace_s` to end, then cancel them and hand them back (re-queued when
        retryable, else interrupted), like a runner that died, but at once."""
        await self._serve(stop or asyncio.Event(), until_idle=False)

    async def drain(self) -> None:
        """Run until nothing is queued, nothing of this runner runs, and no webhook waits."""
        await self._serve(asyncio.Event(), until_idle=True)

    def recover(self) -> list[Task]:
        """Hand back the tasks and deliveries of runners that are gone; the tasks changed."""
        now = time.time()
        changed: list[Task] = []
        for task in self.store.held():
            reason = orphan_reason(task, self.identity, now)
            if reason is None or task.worker_id is None:
                continue
            if task.status != TaskStatus.RUNNING:  # an ended task's webhook delivery, left half-way
                self.store.release_webhook(task.task_id, task.worker_id)
                continue
            after = self._hand_back(task, task.worker_id, reason, now)
            if after is not None:
                changed.append(after)
        return changed

    # ---- the loop -------------------------------------------------------------------------------

    async def _serve(self, stop: asyncio.Event, *, until_idle: bool) -> None:
        LIVE_IN_THIS_PROCESS.add(self.identity.worker_id)
        self._wake = asyncio.Event()
        stopper = asyncio.ensure_future(stop.wait())
        try:
            async with httpx.AsyncClient() as client:
                try:
                    while not stop.is_set():
                        try:
                            self.recover()
                            self._cancel_flagged()
                            started = self._start_runs()
                            delivering = self._start_deliveries(client)
                            self._renew()
                        except (sqlite3.OperationalError, TaskStoreError) as exc:  # locked too long, disk full
                            log.warning("task runner: the task store failed (%s); trying again in %.1f s",
                                        exc, self.poll_s)
                            started = delivering = True
                        if until_idle and not (started or delivering or self._runs or self._deliveries):
                            return
                        self._wake.clear()
                        waker = asyncio.ensure_future(self._wake.wait())
                        await asyncio.wait({waker, stopper}, timeout=self.poll_s, return_when=asyncio.FIRST_COMPLETED)
                        waker.cancel()
                finally:
                    await self._shut_down()
        finally:
            stopper.cancel()
            LIVE_IN_THIS_PROCESS.discard(self.identity.worker_id)

    def _renew(self) -> None:
        now = time.time()
        if now - self._renewed >= self.lease_s / 3:
            self.store.renew(self.identity, now + self.lease_s)
            self._renewed = now

    def _start_runs(self) -> bool:
        started = False
        while len(self._runs) < self.concurrency:
            now = time.time()
            task = self.store.claim(self.identity, now, now + self.lease_s)
            if task is None:
                break
            started = True
            self._emit("claimed", task)
            self._runs[task.task_id] = asyncio.create_task(self._run_one(task), name=f"steplens-task-{task.task_id}")
        return started

    def _start_deliveries(self, client: httpx.AsyncClient) -> bool:
        started = False
        while len(self._deliveries) < self.max_deliveries:
            now = time.time()
            task = self.store.claim_webhook(self.identity, now, now + self.lease_s, exclude=list(self._deliveries))
            if task is None:
                break
            started = True
            self._deliveries[task.task_id] = asyncio.create_task(self._deliver(task, client))
        return started

    def _cancel_flagged(self) -> None:
        for task_id in self.store.cancel_flagged(self.identity):
            run = self._runs.get(task_id)
            if run is not None and task_id not in self._cancelling:
                self._cancelling.add(task_id)
                run.cancel()

    # ---- one run --------------------------------------------------------------------------------

    async def _run_one(self, task: Task) -> None:
        try:
            outcome = await self._execute(task)
            if outcome is None:  # the runner is stopping: the task goes back (re-queued or interrupted)
                self._hand_back(task, self.identity.worker_id, "its runner stopped during the run", time.time())
                return
            status, result, reason = outcome
            ended = self.store.finish(task.task_id, self.identity, status, time.time(), result=result, reason=reason)
            if ended is not None:
                self._emit("ended", ended)
            else:  # its lease ran out (a run that blocked the event loop) and another runner took it
                log.warning("task %s was taken over by another runner; this run's outcome (%s) is not recorded",
                            task.task_id, status.value)
        except Exception:  # a store error: the lease runs out and another runner hands the task back
            log.exception("task %s: recording its outcome failed", task.task_id)
        finally:
            self._runs.pop(task.task_id, None)
            self._cancelling.discard(task.task_id)
            self._wake.set()

    async def _execute(self, task: Task) -> tuple[TaskStatus, TaskResult | None, str | None] | None:
        """(status, result, reason) of one run, or None when the runner's stop interrupted it."""
        try:
            agent = resolve_agent(task.agent, self.agents)
        except UnknownAgent as exc:
            return TaskStatus.FAILED, None, str(exc)
        except Exception as exc:
            log.exception("task %s: building agent %r failed", task.task_id, task.agent)
            return TaskStatus.FAILED, None, f"building agent {task.agent!r} failed: {type(exc).__name__}: {exc}"
        try:
            with telemetry.run_labels(task_id=task.task_id, task_queued_s=task.queued_s, task_attempt=task.attempts):
                run = await agent.run(task.input, conversation_id=task.conversation_id, user_id=task.user_id)
        except asyncio.CancelledError:  # an agent that lets the cancellation through (Agent answers it)
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            if task.task_id not in self._cancelling:
                return None
            return TaskStatus.CANCELLED, None, self._cancel_reason(task, StopReason.CANCELLED.value)
        except Exception as exc:  # Agent.run never raises; another agent class might
            log.exception("task %s: agent %r raised", task.task_id, task.agent)
            return TaskStatus.FAILED, None, f"agent {task.agent!r} raised {type(exc).__name__}: {exc}"
        result = _result_of(run)
        if task.task_id in self._cancelling:
            return TaskStatus.CANCELLED, result, self._cancel_reason(task, result.stop_reason)
        if task.task_id in self._stopping and result.stop_reason == StopReason.CANCELLED.value:
            return None
        return (TaskStatus.SUCCEEDED if result.ok else TaskStatus.FAILED), result, None

    def _cancel_reason(self, task: Task, stop_reason: str) -> str:
        asked = self.store.get(task.task_id)
        why = asked.reason if asked is not None and asked.reason else "cancelled by id"
        return f"{why} (the run stopped: {stop_reason})"

    # ---- handing back -------------------------------------------------------------------------

    def _hand_back(self, task: Task, holder: str, reason: str, now: float) -> Task | None:
        """A run that will not end here: queue it again if the caller allowed a re-run, else report it."""
        if task.cancel_requested:
            after = self.store.interrupt(task.task_id, holder, f"{reason}; it had been asked to cancel", now)
        elif task.retryable and task.attempts < task.max_attempts:
            after = self.store.requeue(
                task.task_id, holder, f"{reason}; re-queued (run {task.attempts} of at most {task.max_attempts})", now)
            if after is not None:
                self._emit("requeued", after)
            return after
        elif task.retryable:
            after = self.store.interrupt(
                task.task_id, holder, f"{reason}; out of attempts ({task.attempts} of {task.max_attempts})", now)
        else:
            after = self.store.interrupt(task.task_id, holder, f"{reason}; not retryable, so not run again", now)
        if after is not None:
            self._emit("interrupted", after)
        return after

    async def _shut_down(self) -> None:
        """Stop: let runs end within `grace_s`, then cancel the rest and hand them back."""
        if self._runs:
            await asyncio.wait(list(self._runs.values()), timeout=self.grace_s)
        for task_id, run in list(self._runs.items()):
            self._stopping.add(task_id)
            run.cancel()
        if self._runs:
            await asyncio.wait(list(self._runs.values()), timeout=5.0)
        for task_id, delivery in list(self._deliveries.items()):
            delivery.cancel()
            with contextlib.suppress(BaseException):
                await delivery
            self.store.release_webhook(task_id, self.identity.worker_id)

    # ---- webhooks -------------------------------------------------------------------------------

    async def _deliver(self, task: Task, client: httpx.AsyncClient) -> None:
        try:
            before = task.webhook_attempts  # attempts of an earlier runner that died delivering it
            status, error = await deliver(
                task, self.webhook, client,
                lambda n, err: self.store.webhook_attempted(task.task_id, before + n, err))
            done = self.store.webhook_done(task.task_id, self.identity, status, time.time(), error)
            if done is not None:
                self._emit("webhook_delivered" if status == WebhookStatus.DELIVERED else "webhook_failed", done)
        except asyncio.CancelledError:
            raise
        except Exception:  # a store error: the delivery is released when the lease runs out
            log.exception("task %s: webhook delivery failed inside the runner", task.task_id)
        finally:
            self._deliveries.pop(task.task_id, None)
            self._wake.set()

    def _emit(self, event: str, task: Task) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event, task)
        except Exception:
            log.warning("task runner: the on_event hook failed on %s", event, exc_info=True)
