"""The caller's side of async tasks: submit, poll, list, cancel. Nothing here runs an agent.

`submit` returns as soon as the task is stored (durably: SQLite commits before it answers), so a
web handler can answer "202, here is your task id" and a `TaskRunner`, in this process or another,
runs it. Bad input is refused before anything is stored.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from kernel.tasks.model import Task, TaskResult, TaskStatus, WebhookStatus
from kernel.tasks.store import SQLiteTaskStore, TaskStore, new_task_id


class UnknownTask(LookupError):
    """No task with this id in the store."""


class IdempotencyConflict(ValueError):
    """An idempotency key reused for a different agent or input: the caller's bug, said loudly."""


def open_store(store: TaskStore | str | Path, *, create: bool = True) -> TaskStore:
    return SQLiteTaskStore(store, create=create) if isinstance(store, str | Path) else store


def _check_webhook_url(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"webhook_url {url!r} is not a URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"webhook_url must be an http(s) URL with a host, not {url!r}")
    return url


class TaskQueue:
    """Submit tasks and ask about them. `store`: a `TaskStore`, or the path of its SQLite file."""

    def __init__(self, store: TaskStore | str | Path) -> None:
        self.store = open_store(store)

    def submit(
        self,
        agent: str,
        task: str,
        *,
        webhook_url: str | None = None,
        idempotency_key: str | None = None,
        retryable: bool = False,
        max_attempts: int = 3,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> str:
        """Store a task for `agent` (a reference, see `kernel.tasks.agents`) and answer its id at once.

        The same `idempotency_key` answers the first task's id again (a client's retried request
        does not run the agent twice). `retryable`: when the runner dies during the run, run it
        again (up to `max_attempts` runs) rather than report it `interrupted` - only for agents
        whose side effects may happen twice."""
        return self.submit_task(agent, task, webhook_url=webhook_url, idempotency_key=idempotency_key,
                                retryable=retryable, max_attempts=max_attempts, conversation_id=conversation_id,
                                user_id=user_id)[0].task_id

    def submit_task(
        self,
        agent: str,
        task: str,
        *,
        webhook_url: str | None = None,
        idempotency_key: str | None = None,
        retryable: bool = False,
        max_attempts: int = 3,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> tuple[Task, bool]:
        """`submit`, answering the stored task and whether this call created it."""
        if not isinstance(agent, str) or not agent.strip():
            raise ValueError("agent must name an agent (a registered name, module:attribute or name@version)")
        if not isinstance(task, str):
            raise ValueError(f"the task's input must be text, not {type(task).__name__}")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if webhook_url is not None:
            _check_webhook_url(webhook_url)
        now = time.time()
        new = Task(
            task_id=new_task_id(), agent=agent.strip(), input=task, conversation_id=conversation_id, user_id=user_id,
            retryable=retryable, max_attempts=max_attempts, idempotency_key=idempotency_key, webhook_url=webhook_url,
            created_at=now, queued_at=now, webhook_status=WebhookStatus.PENDING if webhook_url else None,
        )
        stored, created = self.store.add(new)
        if not created and (stored.agent, stored.input) != (new.agent, new.input):
            raise IdempotencyConflict(
                f"idempotency key {idempotency_key!r} already named task {stored.task_id} with another agent or "
                "input; use a new key for a new task")
        return stored, created

    def status(self, task_id: str) -> Task:
        """The task as stored now (status, attempts, result, webhook delivery)."""
        found = self.store.get(task_id)
        if found is None:
            raise UnknownTask(f"no task {task_id!r} in this task store")
        return found

    def result(self, task_id: str) -> TaskResult | None:
        """The run's outcome once the task ran to an end (None while queued or running, or when it
        never ran: cancelled before it started, an agent that could not be built)."""
        return self.status(task_id).result

    def list(self, status: TaskStatus | str | None = None, limit: int = 100) -> list[Task]:
        return self.store.list(TaskStatus(status) if status is not None else None, limit)

    def cancel(self, task_id: str, reason: str = "cancelled by the caller") -> Task:
        """A queued task is cancelled at once and never starts; a running one is flagged and its
        runner cancels the run within its poll interval. An ended task stays as it ended."""
        found = self.store.cancel(task_id, reason, time.time())
        if found is None:
            raise UnknownTask(f"no task {task_id!r} in this task store")
        return found

    async def wait(self, task_id: str, timeout_s: float = 60.0, poll_s: float = 0.1) -> Task:
        """Poll until the task has ended; TimeoutError names its status when it does not in time."""
        deadline = time.monotonic() + timeout_s
        while not (task := self.status(task_id)).terminal:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"task {task_id} is still {task.status.value} after {timeout_s:g} s")
            await asyncio.sleep(poll_s)
        return task
