"""What a task is: its closed status sets and the record the store keeps for it.

A task is one agent run that a caller submitted and did not wait for. The record is everything a
caller may ask about it later (status, the run's outcome, the webhook's delivery), so it is a plain
pydantic model: the CLI prints it, the webhook posts it, tests compare it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class TaskStatus(StrEnum):
    """Where a task is. The last four are terminal: the task never changes status again."""

    QUEUED = "queued"  # accepted, waiting for a free slot of a runner
    RUNNING = "running"  # a runner started its agent run
    SUCCEEDED = "succeeded"  # the run ended ok (stop reason finish)
    FAILED = "failed"  # the run ended, not ok (a limit, an outage, a hand-off, an agent that could not be built)
    CANCELLED = "cancelled"  # cancelled by id before or during its run
    INTERRUPTED = "interrupted"  # its runner died during the run and the task was not retryable (or out of attempts)


TERMINAL = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.INTERRUPTED})


class WebhookStatus(StrEnum):
    """The delivery of a task's webhook (tasks without a webhook URL have none)."""

    PENDING = "pending"  # the task has not ended, or its delivery is under way
    DELIVERED = "delivered"  # the receiver answered 2xx
    WEBHOOK_FAILED = "webhook_failed"  # every attempt failed; `webhook_last_error` says why


class TaskResult(BaseModel):
    """The part of the run's `RunResult` a task keeps: enough to act on, and the trace to look at."""

    ok: bool
    stop_reason: str
    answer: str | None = None
    error: str | None = None
    trace_id: str | None = None
    steps: int = 0
    duration_s: float = 0.0  # the run's own duration (RunResult.duration_s)
    cost_usd: float = 0.0
    # Set when the agent's hand-off policy gave the run to a person (RunResult.handoff): the caller
    # learns a human has it (and who), not only that it failed.
    handoff_reason: str | None = None
    handoff_target: str | None = None


class Task(BaseModel):
    """One submitted task, as the store has it. Times are unix seconds (UTC)."""

    task_id: str
    agent: str  # the agent reference the runner resolves (kernel.tasks.agents)
    input: str  # the task text given to `agent.run`
    conversation_id: str | None = None
    user_id: str | None = None
    status: TaskStatus = TaskStatus.QUEUED
    retryable: bool = False
    max_attempts: int = 3  # runs a retryable task may get when runners die under it
    attempts: int = 0  # runs started so far
    idempotency_key: str | None = None
    webhook_url: str | None = None
    created_at: float = 0.0
    queued_at: float = 0.0  # the latest time it entered the queue (submit, or a re-queue after a dead runner)
    started_at: float | None = None
    finished_at: float | None = None
    worker_id: str | None = None
    cancel_requested: bool = False
    reason: str | None = None  # why it was cancelled, interrupted, failed to start or re-queued
    result: TaskResult | None = None
    webhook_status: WebhookStatus | None = None
    webhook_attempts: int = 0
    webhook_last_error: str | None = None
    webhook_delivered_at: float | None = None
    # Which runner holds the task (while running) or its webhook delivery: a process id on a host.
    worker_host: str | None = None
    worker_pid: int | None = None
    lease_until: float | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def queued_s(self) -> float | None:
        """Seconds the current (or last) run waited in the queue."""
        return None if self.started_at is None else max(0.0, self.started_at - self.queued_at)

    def webhook_payload(self) -> dict[str, Any]:
        """The JSON body of the task's webhook: the task as a caller polling it would see it."""
        return {
            "task_id": self.task_id,
            "status": self.status.value,
            "agent": self.agent,
            "idempotency_key": self.idempotency_key,
            "attempts": self.attempts,
            "reason": self.reason,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "queued_s": self.queued_s,
            "result": self.result.model_dump() if self.result is not None else None,
        }
