"""A task's webhook reaches a real HTTP receiver that refuses the first deliveries: it is retried with
growing (exponential) pauses until delivered, signed with the configured secret, and the attempts
are on the task. A receiver that never accepts leaves its task `webhook_failed` with the last error,
while another task's webhook and runs go on unhindered."""

from __future__ import annotations

import json
from pathlib import Path

from kernel.tasks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TaskQueue,
    TaskRunner,
    TaskStatus,
    WebhookPolicy,
    WebhookStatus,
    verify_signature,
)
from tests.kernel.tasks import task_agents

SECRET = "s3cret-for-the-test"  # noqa: S105 - a test's own secret


async def test_webhook_is_retried_with_backoff_then_delivered_signed(tmp_path: Path, make_receiver) -> None:
    hook = make_receiver(fail_first=3)
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    task_id = queue.submit("quick", "say done", webhook_url=hook.url())
    policy = WebhookPolicy(secret=SECRET, max_attempts=6, backoff_initial_s=0.2, backoff_max_s=5)
    await TaskRunner(queue, agents={"quick": task_agents.quick}, webhook=policy, poll_s=0.05).drain()

    task = queue.status(task_id)
    assert task.status == TaskStatus.SUCCEEDED and task.result is not None and task.result.answer == "done"
    assert task.webhook_status == WebhookStatus.DELIVERED and task.webhook_attempts == 4
    assert [d.answered for d in hook.deliveries] == [503, 503, 503, 204]
    gaps = [b.at - a.at for a, b in zip(hook.deliveries, hook.deliveries[1:], strict=False)]
    assert gaps[0] >= 0.18 and gaps[1] >= 0.38 and gaps[2] >= 0.78, gaps  # 0.2, 0.4, 0.8 s: exponential
    final = hook.deliveries[-1]
    assert verify_signature(SECRET, final.headers[TIMESTAMP_HEADER.lower()], final.body,
                            final.headers[SIGNATURE_HEADER.lower()])
    assert not verify_signature("another secret", final.headers[TIMESTAMP_HEADER.lower()], final.body,
                                final.headers[SIGNATURE_HEADER.lower()])
    body = json.loads(final.body)
    assert (body["task_id"], body["status"], body["result"]["answer"]) == (task_id, "succeeded", "done")
    assert body["result"]["stop_reason"] == "finish"


async def test_a_receiver_that_never_accepts_ends_webhook_failed_and_blocks_no_other_task(
        tmp_path: Path, make_receiver) -> None:
    dead, alive = make_receiver(fail_always=True), make_receiver()
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    doomed = queue.submit("quick", "one", webhook_url=dead.url())
    fine = queue.submit("quick", "two", webhook_url=alive.url())
    plain = queue.submit("quick", "three")
    policy = WebhookPolicy(max_attempts=4, backoff_initial_s=0.3, backoff_max_s=1)
    await TaskRunner(queue, agents={"quick": task_agents.quick}, webhook=policy, poll_s=0.05,
                     concurrency=1).drain()

    failed = queue.status(doomed)
    assert failed.status == TaskStatus.SUCCEEDED  # the run's outcome stands; only its delivery failed
    assert failed.webhook_status == WebhookStatus.WEBHOOK_FAILED and failed.webhook_attempts == 4
    assert failed.webhook_last_error is not None and "answered 503" in failed.webhook_last_error
    assert len(dead.deliveries) == 4 and SIGNATURE_HEADER.lower() not in dead.deliveries[0].headers  # no secret
    delivered = queue.status(fine)
    assert delivered.webhook_status == WebhookStatus.DELIVERED and delivered.webhook_attempts == 1
    assert queue.status(plain).status == TaskStatus.SUCCEEDED and queue.status(plain).webhook_status is None
    # the healthy receiver got its one delivery while the dead one was still being retried
    assert alive.deliveries[0].at < dead.deliveries[-1].at
