"""Where tasks live: a small `TaskStore` interface and its SQLite implementation.

Why SQLite (the standard library's sqlite3, WAL journal): a task accepted must survive the death of
the process that runs it, and the caller that submits, the worker that runs and the CLI that
polls may be three processes on one machine. WAL lets them read while one writes; every state
change is one short `BEGIN IMMEDIATE` transaction whose WHERE clause names the state it expects,
so two workers can never both claim a task, and a late finish of a task someone else recovered
changes nothing.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from kernel.tasks.model import Task, TaskResult, TaskStatus, WebhookStatus

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    input TEXT NOT NULL,
    conversation_id TEXT,
    user_id TEXT,
    status TEXT NOT NULL,
    retryable INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    attempts INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT UNIQUE,
    webhook_url TEXT,
    created_at REAL NOT NULL,
    queued_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker_id TEXT,
    worker_host TEXT,
    worker_pid INTEGER,
    lease_until REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    result TEXT,
    webhook_status TEXT,
    webhook_attempts INTEGER NOT NULL DEFAULT 0,
    webhook_last_error TEXT,
    webhook_delivered_at REAL
);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, queued_at);
"""

_COLUMNS = tuple(Task.model_fields)


class TaskStoreError(RuntimeError):
    """The task database cannot be used (missing, not a task database, locked for too long)."""


class Worker(Protocol):
    """Who claims work: a runner's id, host and process id (see `kernel.tasks.leases`)."""

    worker_id: str
    host: str
    pid: int


class TaskStore(Protocol):
    """The operations the queue and the runner need. Every method is atomic; the ones that change a
    task return it as it is afterwards, or None when it was not in the state the change expects."""

    def add(self, task: Task) -> tuple[Task, bool]:
        """Store a new task; a task with the same idempotency key is answered instead: (task, created)."""

    def get(self, task_id: str) -> Task | None: ...

    def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[Task]: ...

    def claim(self, worker: Worker, now: float, lease_until: float) -> Task | None:
        """The oldest queued task, now running under `worker` (attempts + 1), or None."""

    def renew(self, worker: Worker, lease_until: float) -> None:
        """Extend the lease of everything `worker` holds (running tasks and webhook deliveries)."""

    def finish(self, task_id: str, worker: Worker, status: TaskStatus, now: float,
               result: TaskResult | None = None, reason: str | None = None) -> Task | None: ...

    def cancel(self, task_id: str, reason: str, now: float) -> Task | None:
        """Cancel a queued task at once, or flag a running one for its runner; None if unknown."""

    def cancel_flagged(self, worker: Worker) -> list[str]:
        """Ids of `worker`'s running tasks someone asked to cancel."""

    def held(self) -> list[Task]:
        """Tasks some runner holds under a lease: running ones, and ended ones whose webhook it delivers."""

    def release_webhook(self, task_id: str, holder: str) -> None:
        """Give up a webhook delivery (its runner stops or died): another runner takes it up."""

    def requeue(self, task_id: str, holder: str, reason: str, now: float) -> Task | None: ...

    def interrupt(self, task_id: str, holder: str, reason: str, now: float) -> Task | None: ...

    def claim_webhook(self, worker: Worker, now: float, lease_until: float,
                      exclude: Sequence[str] = ()) -> Task | None:
        """An ended task whose webhook is still pending and held by no live runner, now held by `worker`."""

    def webhook_attempted(self, task_id: str, attempts: int, error: str | None) -> None: ...

    def webhook_done(self, task_id: str, worker: Worker, status: WebhookStatus, now: float,
                     error: str | None = None) -> Task | None: ...


def new_task_id() -> str:
    return "task_" + uuid.uuid4().hex


class SQLiteTaskStore:
    """`TaskStore` in one SQLite file. `create=False` refuses a missing file (the CLI's reading
    commands: a typo in --db must not quietly make an empty database)."""

    def __init__(self, path: str | Path, *, create: bool = True, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise TaskStoreError(f"no task database at {self.path}: submit a task first "
                                 f"(`steplens tasks submit --db {self.path} ...`) or pass the right --db")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise TaskStoreError(f"{self.path} is not a usable task database ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken before reading so that the read and the write agree."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @staticmethod
    def _task(row: sqlite3.Row | None) -> Task | None:
        if row is None:
            return None
        data: dict[str, Any] = dict(row)
        data["result"] = TaskResult.model_validate_json(data["result"]) if data["result"] else None
        data["retryable"] = bool(data["retryable"])
        data["cancel_requested"] = bool(data["cancel_requested"])
        return Task.model_validate(data)

    def _one(self, db: sqlite3.Connection, task_id: str) -> Task | None:
        return self._task(db.execute("SELECT * FROM tasks WHERE task_id = ?", (task_id,)).fetchone())

    # ---- the caller's side ---------------------------------------------------------------------

    def add(self, task: Task) -> tuple[Task, bool]:
        row = task.model_dump(mode="json")
        row["result"] = None
        with self._tx() as db:
            if task.idempotency_key is not None:
                found = db.execute("SELECT * FROM tasks WHERE idempotency_key = ?", (task.idempotency_key,)).fetchone()
                if found is not None:
                    return self._task(found), False  # type: ignore[return-value]
            db.execute(f"INSERT INTO tasks ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                       [row[c] for c in _COLUMNS])
        return task, True

    def get(self, task_id: str) -> Task | None:
        with self._lock:
            return self._one(self._db, task_id)

    def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[Task]:
        with self._lock:
            if status is None:
                rows = self._db.execute("SELECT * FROM tasks ORDER BY created_at DESC LIMIT ?", (limit,))
            else:
                rows = self._db.execute("SELECT * FROM tasks WHERE status = ? ORDER BY created_at DESC LIMIT ?",
                                        (status.value, limit))
            return [t for t in map(self._task, rows.fetchall()) if t is not None]

    def cancel(self, task_id: str, reason: str, now: float) -> Task | None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET status = ?, finished_at = ?, reason = ? WHERE task_id = ? AND status = ?",
                       (TaskStatus.CANCELLED.value, now, reason, task_id, TaskStatus.QUEUED.value))
            db.execute("UPDATE tasks SET cancel_requested = 1, reason = ? WHERE task_id = ? AND status = ?",
                       (reason, task_id, TaskStatus.RUNNING.value))
            return self._one(db, task_id)

    # ---- the runner's side ---------------------------------------------------------------------

    def claim(self, worker: Worker, now: float, lease_until: float) -> Task | None:
        with self._tx() as db:
            row = db.execute("SELECT task_id FROM tasks WHERE status = ? ORDER BY queued_at, created_at LIMIT 1",
                             (TaskStatus.QUEUED.value,)).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE tasks SET status = ?, started_at = ?, attempts = attempts + 1, worker_id = ?, "
                "worker_host = ?, worker_pid = ?, lease_until = ? WHERE task_id = ?",
                (TaskStatus.RUNNING.value, now, worker.worker_id, worker.host, worker.pid, lease_until,
                 row["task_id"]),
            )
            return self._one(db, row["task_id"])

    def renew(self, worker: Worker, lease_until: float) -> None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET lease_until = ? WHERE worker_id = ? AND (status = ? OR webhook_status = ?)",
                       (lease_until, worker.worker_id, TaskStatus.RUNNING.value, WebhookStatus.PENDING.value))

    def finish(self, task_id: str, worker: Worker, status: TaskStatus, now: float,
               result: TaskResult | None = None, reason: str | None = None) -> Task | None:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE tasks SET status = ?, finished_at = ?, result = ?, reason = COALESCE(?, reason), "
                "lease_until = NULL WHERE task_id = ? AND status = ? AND worker_id = ?",
                (status.value, now, result.model_dump_json() if result is not None else None, reason, task_id,
                 TaskStatus.RUNNING.value, worker.worker_id),
            )
            return self._one(db, task_id) if cur.rowcount else None

    def cancel_flagged(self, worker: Worker) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT task_id FROM tasks WHERE status = ? AND worker_id = ? AND cancel_requested = 1",
                                    (TaskStatus.RUNNING.value, worker.worker_id)).fetchall()
            return [r["task_id"] for r in rows]

    def held(self) -> list[Task]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM tasks WHERE lease_until IS NOT NULL").fetchall()
            return [t for t in map(self._task, rows) if t is not None]

    def release_webhook(self, task_id: str, holder: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET lease_until = NULL WHERE task_id = ? AND worker_id = ? AND webhook_status = ? "
                       "AND status != ?", (task_id, holder, WebhookStatus.PENDING.value, TaskStatus.RUNNING.value))

    def requeue(self, task_id: str, holder: str, reason: str, now: float) -> Task | None:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE tasks SET status = ?, queued_at = ?, started_at = NULL, worker_id = NULL, worker_host = NULL, "
                "worker_pid = NULL, lease_until = NULL, reason = ? WHERE task_id = ? AND status = ? AND worker_id = ?",
                (TaskStatus.QUEUED.value, now, reason, task_id, TaskStatus.RUNNING.value, holder),
            )
            return self._one(db, task_id) if cur.rowcount else None

    def interrupt(self, task_id: str, holder: str, reason: str, now: float) -> Task | None:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE tasks SET status = ?, finished_at = ?, lease_until = NULL, reason = ? "
                "WHERE task_id = ? AND status = ? AND worker_id = ?",
                (TaskStatus.INTERRUPTED.value, now, reason, task_id, TaskStatus.RUNNING.value, holder),
            )
            return self._one(db, task_id) if cur.rowcount else None

    # ---- webhooks ------------------------------------------------------------------------------

    def claim_webhook(self, worker: Worker, now: float, lease_until: float,
                      exclude: Sequence[str] = ()) -> Task | None:
        """A delivery is free when nobody holds it (`lease_until` NULL: the task just ended) or its
        holder's lease ran out (that runner died mid-delivery)."""
        with self._tx() as db:
            marks = ", ".join("?" * len(exclude))
            skip = f" AND task_id NOT IN ({marks})" if exclude else ""
            row = db.execute(
                "SELECT task_id FROM tasks WHERE webhook_status = ? AND status IN (?, ?, ?, ?) "
                f"AND (lease_until IS NULL OR lease_until < ?){skip} ORDER BY finished_at LIMIT 1",
                (WebhookStatus.PENDING.value, TaskStatus.SUCCEEDED.value, TaskStatus.FAILED.value,
                 TaskStatus.CANCELLED.value, TaskStatus.INTERRUPTED.value, now, *exclude),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE tasks SET worker_id = ?, worker_host = ?, worker_pid = ?, lease_until = ? "
                       "WHERE task_id = ?", (worker.worker_id, worker.host, worker.pid, lease_until, row["task_id"]))
            return self._one(db, row["task_id"])

    def webhook_attempted(self, task_id: str, attempts: int, error: str | None) -> None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET webhook_attempts = ?, webhook_last_error = ? WHERE task_id = ?",
                       (attempts, error, task_id))

    def webhook_done(self, task_id: str, worker: Worker, status: WebhookStatus, now: float,
                     error: str | None = None) -> Task | None:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE tasks SET webhook_status = ?, webhook_last_error = COALESCE(?, webhook_last_error), "
                "webhook_delivered_at = ?, lease_until = NULL WHERE task_id = ? AND worker_id = ? AND webhook_status = ?",
                (status.value, error, now if status == WebhookStatus.DELIVERED else None, task_id, worker.worker_id,
                 WebhookStatus.PENDING.value),
            )
            return self._one(db, task_id) if cur.rowcount else None


def describe_statuses(tasks: Sequence[Task]) -> dict[str, int]:
    """How many tasks per status (the worker's progress line and `steplens tasks list`'s title)."""
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.status.value] = counts.get(task.status.value, 0) + 1
    return counts


__all__ = ["SQLiteTaskStore", "TaskStore", "TaskStoreError", "Worker", "describe_statuses", "new_task_id"]
