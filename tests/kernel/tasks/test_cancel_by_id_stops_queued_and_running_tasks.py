"""Cancellation by id: a queued task never starts (no run, no attempt); a running task's run is
cancelled (asyncio cancellation, long before its tool would have returned) and the task ends
`cancelled` with the run's stop reason recorded, and its webhook says so. Cancelling an ended task
changes nothing."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from kernel.tasks import TaskQueue, TaskRunner, TaskStatus, UnknownTask
from tests.kernel.tasks import task_agents


async def _until(predicate, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_cancel_of_a_queued_and_of_a_running_task(tmp_path: Path, make_receiver, monkeypatch) -> None:
    monkeypatch.setenv("TASKS_SLOW_S", "60")
    hook = make_receiver()
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    running = queue.submit("slow", "where is 1001?", webhook_url=hook.url("/running"))
    queued = queue.submit("slow", "where is 1002?", webhook_url=hook.url("/queued"))
    runner = TaskRunner(queue, agents={"slow": task_agents.slow}, concurrency=1, poll_s=0.05)
    stop = asyncio.Event()
    serving = asyncio.create_task(runner.run(stop))
    try:
        await _until(lambda: queue.status(running).status == TaskStatus.RUNNING)
        assert queue.cancel(queued, "the customer withdrew it").status == TaskStatus.CANCELLED
        t0 = time.monotonic()
        assert queue.cancel(running, "the customer hung up").status == TaskStatus.RUNNING  # flagged
        await _until(lambda: queue.status(running).terminal)
        assert time.monotonic() - t0 < 10  # the 60 s tool did not finish: the run was cancelled
        await _until(lambda: len(hook.deliveries) == 2)
    finally:
        stop.set()
        await serving

    never = queue.status(queued)
    assert never.status == TaskStatus.CANCELLED and never.attempts == 0 and never.started_at is None
    assert never.result is None and never.reason == "the customer withdrew it"
    cut = queue.status(running)
    assert cut.status == TaskStatus.CANCELLED and cut.attempts == 1
    assert cut.result is not None and cut.result.stop_reason == "cancelled" and not cut.result.ok
    assert cut.reason == "the customer hung up (the run stopped: cancelled)"
    assert {d.path: json.loads(d.body)["status"] for d in hook.deliveries} == {"/running": "cancelled",
                                                                                "/queued": "cancelled"}
    # An ended task stays as it ended; an unknown id is an error, not a silent no-op.
    assert queue.cancel(running).status == TaskStatus.CANCELLED and queue.status(running).reason == cut.reason
    with pytest.raises(UnknownTask):
        queue.cancel("task_nope")
