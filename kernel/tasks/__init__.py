"""Async task mode: submit an agent run, get a task id at once, poll it or get a webhook when it ends.

- `TaskQueue` (queue.py): the caller's side - submit, status, result, list, cancel, wait.
- `TaskRunner` (runner.py): runs the queue's tasks under a concurrency limit, delivers webhooks,
  resumes what a dead runner left (re-run when retryable, else `interrupted`).
- `SQLiteTaskStore` (store.py) behind the `TaskStore` interface: durable, shared by processes.
- `WebhookPolicy`, `verify_signature` (webhooks.py): signed, retried deliveries.
- `task_router`, `task_app` (http.py): the same over HTTP, for a service's own app.
- `steplens tasks ...` (cli.py): the same from a terminal.
"""

from kernel.tasks.agents import UnknownAgent, resolve_agent
from kernel.tasks.model import TERMINAL, Task, TaskResult, TaskStatus, WebhookStatus
from kernel.tasks.queue import IdempotencyConflict, TaskQueue, UnknownTask
from kernel.tasks.runner import TaskRunner
from kernel.tasks.store import SQLiteTaskStore, TaskStore, TaskStoreError
from kernel.tasks.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookPolicy, verify_signature

__all__ = [
    "SIGNATURE_HEADER",
    "TERMINAL",
    "TIMESTAMP_HEADER",
    "IdempotencyConflict",
    "SQLiteTaskStore",
    "Task",
    "TaskQueue",
    "TaskResult",
    "TaskRunner",
    "TaskStatus",
    "TaskStore",
    "TaskStoreError",
    "UnknownAgent",
    "UnknownTask",
    "WebhookPolicy",
    "WebhookStatus",
    "resolve_agent",
    "verify_signature",
]
