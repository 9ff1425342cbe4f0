"""A worker process killed with SIGKILL mid-run loses nothing: the next worker re-runs the task the
caller marked retryable, reports the other `interrupted` with the reason (and fires its webhook),
and runs the task that was still queued. A runner on another host that stops renewing its lease
loses its task the same way once the lease ran out, and not before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kernel.tasks import TaskQueue, TaskRunner, TaskStatus
from tests.kernel.tasks import task_agents
from tests.support.readme import ROOT

SLOW = "tests.kernel.tasks.task_agents:slow"


def worker(db: Path, *args: str, slow_s: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TASKS_SLOW_S": str(slow_s)}
    return subprocess.Popen([sys.executable, "-m", "steplens.cli", "tasks", "worker", "--db", str(db),
                             "--poll", "0.1", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for(predicate, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sigkilled_worker_tasks_rerun_or_interrupted_and_queued_ones_run(tmp_path: Path, make_receiver) -> None:
    hook = make_receiver()
    db = tmp_path / "tasks.sqlite"
    queue = TaskQueue(db)
    again = queue.submit(SLOW, "where is 1001?", retryable=True)
    lost = queue.submit(SLOW, "where is 1002?", webhook_url=hook.url("/lost"))
    waiting = queue.submit(SLOW, "where is 1003?")

    first = worker(db, "--concurrency", "2", slow_s=120)
    try:
        wait_for(lambda: all(queue.status(t).status == TaskStatus.RUNNING for t in (again, lost)))
        assert queue.status(waiting).status == TaskStatus.QUEUED  # the concurrency limit held it back
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        first.kill()
    assert queue.status(again).status == TaskStatus.RUNNING  # nobody has noticed yet

    second = worker(db, "--drain", slow_s=0.05)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out

    rerun = queue.status(again)
    assert rerun.status == TaskStatus.SUCCEEDED and rerun.attempts == 2, out
    assert rerun.result is not None and rerun.result.answer == "it left the warehouse"
    assert f"process {first.pid}" in (rerun.reason or "") and "re-queued" in (rerun.reason or "")
    gone = queue.status(lost)
    assert gone.status == TaskStatus.INTERRUPTED and gone.attempts == 1 and gone.result is None
    assert f"process {first.pid}" in (gone.reason or "") and "not retryable" in (gone.reason or "")
    [delivery] = hook.for_path("/lost")
    assert json.loads(delivery.body)["status"] == "interrupted"
    assert queue.status(lost).webhook_status == "delivered"
    ran = queue.status(waiting)
    assert ran.status == TaskStatus.SUCCEEDED and ran.attempts == 1
    assert "requeued" in out and "interrupted" in out  # the worker says what it took over


class _Elsewhere:
    """A runner on another host: its process cannot be checked, only its lease."""

    worker_id, host, pid = "worker_elsewhere", "another-host.example", 4242


async def test_a_runner_on_another_host_loses_its_task_only_when_its_lease_ran_out(tmp_path: Path) -> None:
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    task_id = queue.submit("quick", "say done", retryable=True)
    now = time.time()
    assert queue.store.claim(_Elsewhere(), now, now + 1.0) is not None
    runner = TaskRunner(queue, agents={"quick": task_agents.quick})
    assert runner.recover() == [] and queue.status(task_id).status == TaskStatus.RUNNING  # lease still valid
    time.sleep(1.1)
    [back] = runner.recover()
    assert back.status == TaskStatus.QUEUED and "stopped renewing its lease" in (back.reason or "")
    await runner.drain()
    done = queue.status(task_id)
    assert done.status == TaskStatus.SUCCEEDED and done.attempts == 2


def test_a_webhook_left_half_delivered_by_a_killed_worker_is_delivered_by_the_next(tmp_path: Path,
                                                                                  make_receiver) -> None:
    hook = make_receiver(fail_first=1)
    db = tmp_path / "tasks.sqlite"
    queue = TaskQueue(db)
    task_id = queue.submit("tests.kernel.tasks.task_agents:quick", "say done", webhook_url=hook.url())
    first = worker(db, slow_s=0)
    try:
        wait_for(lambda: len(hook.deliveries) == 1)  # refused; the worker now waits out its backoff
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        first.kill()
    assert queue.status(task_id).webhook_status == "pending" and queue.status(task_id).webhook_attempts == 1

    second = worker(db, "--drain", slow_s=0)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out
    task = queue.status(task_id)
    assert task.status == TaskStatus.SUCCEEDED and task.attempts == 1  # the run is not repeated
    assert task.webhook_status == "delivered" and [d.answered for d in hook.deliveries] == [503, 204]
    assert task.webhook_attempts == 2 and task.webhook_last_error is None  # counted across both workers
