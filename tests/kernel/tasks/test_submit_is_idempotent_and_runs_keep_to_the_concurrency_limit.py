"""`submit` answers a task id at once and stores the task before it answers; the same idempotency key
answers the same task (and refuses to be reused for other work); bad input stores nothing; the
runner never runs more tasks at once than its concurrency limit; an agent it cannot build fails
the task with a reason instead of stopping the runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.tasks import IdempotencyConflict, TaskQueue, TaskRunner, TaskStatus
from tests.kernel.tasks import task_agents


async def test_idempotent_submit_bad_input_and_the_concurrency_limit(tmp_path: Path) -> None:
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    first = queue.submit("counted", "look up 7", idempotency_key="order-7")
    assert queue.status(first).status == TaskStatus.QUEUED  # stored before submit answered
    assert TaskQueue(tmp_path / "tasks.sqlite").status(first).status == TaskStatus.QUEUED  # and durable
    assert queue.submit("counted", "look up 7", idempotency_key="order-7") == first
    with pytest.raises(IdempotencyConflict, match="order-7"):
        queue.submit("counted", "look up 8", idempotency_key="order-7")
    for bad in ({"agent": ""}, {"webhook_url": "ftp://example.org/x"}, {"webhook_url": "not a url"}):
        with pytest.raises(ValueError):
            queue.submit(**{"agent": "counted", "task": "x", **bad})
    others = [queue.submit("counted", f"look up {i}") for i in range(7)]
    broken = queue.submit("no_such_agent", "x")
    assert len(queue.list()) == 9

    task_agents.IN_FLIGHT.update(now=0, max=0)
    await TaskRunner(queue, agents={"counted": task_agents.counted}, concurrency=3, poll_s=0.05).drain()
    assert task_agents.IN_FLIGHT["max"] == 3  # the limit was reached and never passed
    assert all(queue.status(t).status == TaskStatus.SUCCEEDED for t in [first, *others])
    failed = queue.status(broken)
    assert failed.status == TaskStatus.FAILED and "unknown agent 'no_such_agent'" in (failed.reason or "")
    assert queue.result(first) is not None and queue.result(first).answer == "shipped"
