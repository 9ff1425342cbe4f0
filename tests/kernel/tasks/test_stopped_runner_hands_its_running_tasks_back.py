"""A runner that is stopped while tasks run gives them `grace_s`, then cancels them and hands them
back rather than recording a cancelled run as the task's outcome: the retryable task is queued again
(and a later runner finishes it), the other ends `interrupted` with the reason."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kernel.tasks import TaskQueue, TaskRunner, TaskStatus
from tests.kernel.tasks import task_agents


async def test_stop_hands_running_tasks_back_requeued_or_interrupted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TASKS_SLOW_S", "60")
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    again = queue.submit("slow", "where is 1001?", retryable=True)
    lost = queue.submit("slow", "where is 1002?")
    runner = TaskRunner(queue, agents={"slow": task_agents.slow}, poll_s=0.05, grace_s=0.2)
    stop = asyncio.Event()
    serving = asyncio.create_task(runner.run(stop))
    deadline = time.monotonic() + 30
    while not all(queue.status(t).status == TaskStatus.RUNNING for t in (again, lost)):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(serving, 20)

    back = queue.status(again)
    assert back.status == TaskStatus.QUEUED and back.attempts == 1 and back.result is None
    assert "its runner stopped during the run" in (back.reason or "") and "re-queued" in (back.reason or "")
    gone = queue.status(lost)
    assert gone.status == TaskStatus.INTERRUPTED and "not retryable" in (gone.reason or "")

    monkeypatch.setenv("TASKS_SLOW_S", "0.01")
    await TaskRunner(queue, agents={"slow": task_agents.slow}, poll_s=0.05).drain()
    done = queue.status(again)
    assert done.status == TaskStatus.SUCCEEDED and done.attempts == 2
    assert done.result is not None and done.result.answer == "it left the warehouse"
