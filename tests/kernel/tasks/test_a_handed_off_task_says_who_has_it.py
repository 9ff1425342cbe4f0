"""A task whose run the agent's hand-off policy gave to a person says so, wherever the caller looks:
the task's result (`handoff_reason`, `handoff_target`), the webhook a real HTTP receiver gets, and
`steplens tasks status` run as its own process. Before, such a task read only `failed` with stop
reason `max_steps` (or `handoff`), and the caller could not tell that someone already had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kernel.tasks import TaskQueue, TaskRunner, TaskStatus, WebhookStatus
from tests.kernel.tasks import task_agents
from tests.support.readme import ROOT


async def test_handed_off_tasks_name_the_reason_and_target_in_result_webhook_and_cli(
        tmp_path: Path, make_receiver) -> None:
    hook = make_receiver()
    db = tmp_path / "tasks.sqlite"
    queue = TaskQueue(db)
    escalated = queue.submit("tests.kernel.tasks.task_agents:escalating", "I want a manager",
                             webhook_url=hook.url())
    limited = queue.submit("step-limited", "Find order 7")
    plain = queue.submit("quick", "say done")
    await TaskRunner(queue, agents={"step-limited": task_agents.step_limited, "quick": task_agents.quick},
                     poll_s=0.05).drain()

    first, second, third = queue.status(escalated), queue.status(limited), queue.status(plain)
    assert first.status == TaskStatus.FAILED and first.result is not None
    assert (first.result.stop_reason, first.result.handoff_reason, first.result.handoff_target) == (
        "handoff", "escalation", "support-tier-2")
    assert second.status == TaskStatus.FAILED and second.result is not None
    assert (second.result.stop_reason, second.result.handoff_reason, second.result.handoff_target) == (
        "max_steps", "max_steps", "ops-on-call")
    assert third.result is not None and third.result.handoff_reason is None and third.result.handoff_target is None

    assert first.webhook_status == WebhookStatus.DELIVERED
    body = json.loads(hook.deliveries[-1].body)
    assert body["result"]["handoff_reason"] == "escalation" and body["result"]["handoff_target"] == "support-tier-2"

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    status = subprocess.run([sys.executable, "-m", "steplens.cli", "tasks", "status", limited, "--db", str(db)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "handed off" in status.stdout and "to ops-on-call (max_steps)" in status.stdout
    plain_status = subprocess.run([sys.executable, "-m", "steplens.cli", "tasks", "status", plain, "--db", str(db)],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "handed off" not in plain_status.stdout
