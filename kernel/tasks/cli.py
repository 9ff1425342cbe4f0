"""The bodies of `steplens tasks submit|status|list|cancel|result|worker` (the script only dispatches).

Every command works on one task database (`--db`, default data/tasks.sqlite). Only `submit`
creates it: the others refuse a missing file by name, so a mistyped path is an error rather than
an empty queue. Exit codes: 0 done; 1 the task is not (yet) what was asked (`result` of a task
still running or that ended not ok, `cancel` of an ended task); 2 bad input, an unknown task or no
task database.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernel.tasks.model import Task, TaskStatus
from kernel.tasks.queue import IdempotencyConflict, TaskQueue, UnknownTask
from kernel.tasks.store import SQLiteTaskStore, TaskStoreError, describe_statuses

DEFAULT_DB = Path("data/tasks.sqlite")
WEBHOOK_SECRET_ENV = "STEPLENS_WEBHOOK_SECRET"
API_KEY_ENV = "STEPLENS_API_KEY"
SERVICE_NAME = "steplens-tasks"
_STYLE = {"succeeded": "green", "failed": "red", "interrupted": "red", "cancelled": "yellow", "running": "cyan"}


def _when(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _open(db: Path, console: Console, *, create: bool = False) -> TaskQueue | None:
    try:
        return TaskQueue(SQLiteTaskStore(db, create=create))
    except TaskStoreError as exc:
        console.print(f"[red]{exc}[/red]")
        return None


def _status_text(task: Task) -> str:
    style = _STYLE.get(task.status.value, "")
    return f"[{style}]{task.status.value}[/{style}]" if style else task.status.value


def submit_command(db: Path, agent: str, text: str, *, webhook_url: str | None = None,
                   idempotency_key: str | None = None, retryable: bool = False, max_attempts: int = 3,
                   user_id: str | None = None, conversation_id: str | None = None,
                   console: Console | None = None) -> int:
    console = console or Console()
    queue = _open(db, console, create=True)
    if queue is None:
        return 2
    try:
        task, created = queue.submit_task(agent, text, webhook_url=webhook_url, idempotency_key=idempotency_key,
                                          retryable=retryable, max_attempts=max_attempts, user_id=user_id,
                                          conversation_id=conversation_id)
    except (ValueError, IdempotencyConflict) as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    console.print(task.task_id, highlight=False, soft_wrap=True)
    if not created:
        console.print(f"(idempotency key {idempotency_key!r}: the task submitted before, now {task.status.value})",
                      style="dim")
    return 0


def status_command(db: Path, task_id: str, *, as_json: bool = False, console: Console | None = None) -> int:
    console = console or Console()
    queue = _open(db, console)
    if queue is None:
        return 2
    try:
        task = queue.status(task_id)
    except UnknownTask as exc:
        console.print(f"[red]{exc} ({db}); `steplens tasks list --db {db}` lists them[/red]")
        return 2
    if as_json:
        console.print_json(task.model_dump_json())
        return 0
    table = Table(title=f"task {task.task_id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    result = task.result
    rows = [
        ("status", _status_text(task)), ("agent", task.agent), ("input", task.input[:500]),
        ("attempts", f"{task.attempts} (retryable, at most {task.max_attempts})" if task.retryable
         else str(task.attempts)),
        ("submitted", _when(task.created_at)), ("started", _when(task.started_at)),
        ("finished", _when(task.finished_at)),
        ("queued", "" if task.queued_s is None else f"{task.queued_s:.2f} s"),
        ("reason", task.reason or ""),
        ("stop reason", result.stop_reason if result else ""),
        ("handed off", f"to {result.handoff_target} ({result.handoff_reason})"
         if result and result.handoff_reason else ""),
        ("trace", (result.trace_id or "") if result else ""),
        ("webhook", "" if task.webhook_url is None else
         f"{task.webhook_status.value if task.webhook_status else ''}, {task.webhook_attempts} attempt(s)"
         + (f", last error: {task.webhook_last_error}" if task.webhook_last_error else "")),
    ]
    for name, value in rows:
        if value:
            table.add_row(name, value)
    console.print(table)
    return 0


def result_command(db: Path, task_id: str, *, wait_s: float = 0.0, console: Console | None = None) -> int:
    """Print the run's outcome as JSON; exit 0 when the task succeeded, 1 otherwise."""
    console = console or Console()
    queue = _open(db, console)
    if queue is None:
        return 2
    try:
        task = asyncio.run(queue.wait(task_id, timeout_s=wait_s)) if wait_s > 0 else queue.status(task_id)
    except UnknownTask as exc:
        console.print(f"[red]{exc} ({db})[/red]")
        return 2
    except TimeoutError as exc:
        console.print(f"[yellow]{exc}[/yellow]")
        return 1
    if not task.terminal:
        console.print(f"[yellow]task {task_id} is still {task.status.value}: no result yet "
                      "(pass --wait SECONDS to wait for it)[/yellow]")
        return 1
    body = {"task_id": task.task_id, "status": task.status.value, "reason": task.reason,
            "result": task.result.model_dump() if task.result else None}
    console.print_json(json.dumps(body))
    return 0 if task.status == TaskStatus.SUCCEEDED else 1


def list_command(db: Path, *, status: str | None = None, limit: int = 100, console: Console | None = None) -> int:
    console = console or Console()
    queue = _open(db, console)
    if queue is None:
        return 2
    try:
        tasks = queue.list(status, limit)
    except ValueError:
        console.print(f"[red]unknown status {status!r}; one of {', '.join(s.value for s in TaskStatus)}[/red]")
        return 2
    counts = ", ".join(f"{n} {s}" for s, n in describe_statuses(tasks).items()) or "none"
    table = Table(title=f"tasks in {db} (newest first): {counts}")
    table.add_column("task", no_wrap=True)
    for column in ("status", "agent", "submitted (UTC)", "attempts", "stop reason", "webhook", "reason"):
        table.add_column(column, overflow="fold")
    for t in tasks:
        table.add_row(t.task_id, _status_text(t), t.agent, _when(t.created_at), str(t.attempts),
                      t.result.stop_reason if t.result else "", t.webhook_status.value if t.webhook_status else "",
                      (t.reason or "")[:120])
    console.print(table)
    return 0


def cancel_command(db: Path, task_id: str, *, reason: str | None = None, console: Console | None = None) -> int:
    console = console or Console()
    queue = _open(db, console)
    if queue is None:
        return 2
    try:
        task = queue.cancel(task_id, reason or "cancelled from the command line")
    except UnknownTask as exc:
        console.print(f"[red]{exc} ({db})[/red]")
        return 2
    if task.status == TaskStatus.CANCELLED:
        console.print(f"task {task_id} cancelled: it never started")
    elif task.status == TaskStatus.RUNNING:
        console.print(f"task {task_id} is running: its runner cancels the run within its poll interval "
                      f"(`steplens tasks status {task_id}` shows when it ended)")
    else:
        console.print(f"[yellow]task {task_id} had already ended ({task.status.value}); nothing to cancel[/yellow]")
        return 1
    return 0


def worker_command(db: Path, *, concurrency: int = 4, poll_s: float = 0.5, lease_s: float = 30.0,
                   endpoint: str | None = None, drain: bool = False, create: bool = False,
                   console: Console | None = None) -> int:
    """Run the queue until SIGINT/SIGTERM (or, with `drain`, until it is empty), printing each task's
    progress. The webhook secret comes from STEPLENS_WEBHOOK_SECRET."""
    from kernel.tasks.runner import TaskRunner
    from kernel.tasks.webhooks import WebhookPolicy

    console = console or Console()
    queue = _open(db, console, create=create)
    if queue is None:
        console.print("start the worker with --create to make an empty one, or submit a task first")
        return 2
    handle = None
    if endpoint is not None:
        import tracer
        from kernel.examples.demo import traces_url

        key = os.environ.get(API_KEY_ENV)
        handle = tracer.setup(service_name=SERVICE_NAME, endpoint=traces_url(endpoint),
                              headers={"x-api-key": key} if key else None)

    def show(event: str, task: Task) -> None:
        detail = task.result.stop_reason if event == "ended" and task.result else (task.reason or "")
        if event.startswith("webhook"):
            detail = f"{task.webhook_attempts} attempt(s)" + (f": {task.webhook_last_error}"
                                                              if task.webhook_last_error else "")
        console.print(f"{_when(time.time())} {event:<17} {task.task_id} {_status_text(task)} {task.agent} {detail}",
                      highlight=False)

    runner = TaskRunner(queue, concurrency=concurrency, poll_s=poll_s, lease_s=lease_s, on_event=show,
                        webhook=WebhookPolicy(secret=os.environ.get(WEBHOOK_SECRET_ENV) or None))

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if drain:
            await runner.drain()
        else:
            await runner.run(stop)

    waiting = describe_statuses(queue.list(TaskStatus.QUEUED, limit=1_000_000)).get("queued", 0)
    console.print(f"worker {runner.identity.worker_id} (pid {runner.identity.pid}) on {db}: {waiting} queued, "
                  f"concurrency {concurrency}" + (f", traces to {endpoint}" if endpoint else "") +
                  ("; stops when the queue is empty" if drain else "; Ctrl-C stops"), highlight=False)
    try:
        asyncio.run(serve())
    finally:
        if handle is not None:
            handle.force_flush(30.0)
            handle.shutdown()
    console.print("worker stopped")
    return 0
