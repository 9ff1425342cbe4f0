"""The queue filler the server runs: every `queue_fill_interval_s`, each queue's live pass.

Why a thread of its own that hands each pass to the store's writer: the pass reads and inserts a
few rows in one transaction, which must not interleave with a load (single writer), but the OTLP
receivers never wait for it: exports are acknowledged once spooled, and loads queue behind a pass
of milliseconds. Why errors are kept per queue: a queue whose pass fails (its filter hits a query
error) shows the reason in `GET /api/queues` and the log, and every other queue goes on filling.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ingest.clock import utcnow
from ingest.queues.model import DeclaredQueue
from ingest.store.work import work_of

log = logging.getLogger(__name__)
WRITE_TIMEOUT_S = 60.0


@dataclass
class FillStatus:
    last_pass: datetime | None = None
    last_error: str | None = None
    added: int = 0  # runs the live passes added since the server started


class QueueFiller:
    """`store` needs `read()` and `run_write(fn) -> Future` (either store; the SQL is `work_of(store)`'s)."""

    def __init__(self, store: object, interval_s: float, declared: list[DeclaredQueue],
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.work = work_of(store)  # the store's own SQL for the queue tables
        self.interval_s = interval_s
        self.declared = list(declared)
        self.clock = clock
        self.status: dict[tuple[str, str], FillStatus] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self, fn: Callable[..., object]) -> object:
        return self.store.run_write(fn).result(WRITE_TIMEOUT_S)  # type: ignore[attr-defined]

    def start(self) -> None:
        """Bring the declared queues in line with the config, then fill on a thread."""
        now = self.clock()
        self.write(lambda conn: self.work.queue_table.sync_declared(conn, self.declared, now))
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="steplens-queue-filler", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        """Whether this process runs the job's thread now (reported by /readyz, ingest/jobs.py)."""
        return self._thread is not None and self._thread.is_alive()

    def fill_all(self) -> int:
        """One live pass over every queue; returns how many runs entered. Failures stay per queue."""
        with self.store.read() as cur:  # type: ignore[attr-defined]
            queues = [(q.project, q.name) for q in self.work.queue_table.list_queues(cur, None)]
        added = 0
        for project, name in queues:
            if self._stop.is_set():
                break
            status = self.status.setdefault((project, name), FillStatus())
            now = self.clock()

            def one(conn: object, project: str = project, name: str = name, now: datetime = now) -> int:
                current = self.work.queue_table.get(conn, project, name)
                return 0 if current is None else self.work.queue_fill.fill_live(conn, current, now).added

            try:
                n = int(self.write(one))  # type: ignore[call-overload]
            except Exception as exc:  # noqa: BLE001 - kept on the queue and logged: errors are data
                log.exception("annotation queue %s/%s could not be filled", project, name)
                status.last_error = f"{type(exc).__name__}: {exc}"
            else:
                status.last_error = None
                status.added += n
                added += n
            status.last_pass = now
        return added

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.fill_all()
            except Exception:  # noqa: BLE001 - a store that is down now may be up at the next pass
                log.exception("annotation queue pass failed")
