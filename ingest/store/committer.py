"""Group commit: one thread appends every queued record to the spool and fsyncs ONCE for all of them.

Why: an fsync costs milliseconds, so one per request caps ingest at a few hundred requests/s on a
laptop disk. Requests that arrive while the previous fsync runs, or within `interval_s` of the
first waiting one, share the next fsync; each request's future resolves only after that fsync.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ingest.store.spool import Position, SpoolWriter

log = logging.getLogger(__name__)


@dataclass(eq=False)
class PendingWrite:
    """One framed spool record waiting for its fsync; `payload` rides along to the loader."""

    record: bytes
    payload: Any
    future: Future[Position] = field(default_factory=Future)
    arrived: float = field(default_factory=time.monotonic)


class CommitterClosed(RuntimeError):
    """Raised by `enqueue` once `close` has begun."""


class GroupCommitter:
    """Owns the SpoolWriter; everything else only enqueues.

    `on_durable(group)` is called with `(write, end_position)` pairs after their fsync and BEFORE
    their futures resolve, so whoever waits on a future can count on the loader already knowing.
    `on_failed(group, error)` is called when the write/fsync failed (futures then carry the error).
    """

    def __init__(
        self,
        writer: SpoolWriter,
        interval_s: float,
        on_durable: Callable[[list[tuple[PendingWrite, Position]]], None],
        on_failed: Callable[[list[PendingWrite], BaseException], None],
        on_commit: Callable[[float, int], None] | None = None,
        max_group_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self._writer = writer
        self._interval = max(0.0, interval_s)
        self._on_durable = on_durable
        self._on_failed = on_failed
        self._on_commit = on_commit
        self._max_group_bytes = max_group_bytes
        self._cond = threading.Condition()
        self._queue: list[PendingWrite] = []
        self._queued_bytes = 0
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="steplens-spool-committer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def enqueue(self, write: PendingWrite) -> None:
        with self._cond:
            if self._closing:
                raise CommitterClosed("the spool committer is shutting down")
            self._queue.append(write)
            self._queued_bytes += len(write.record)
            self._cond.notify_all()

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting, commit everything already queued, and wait for the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._writer.close()

    def _take_group(self) -> list[PendingWrite] | None:
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            if not self._queue:
                return None
            deadline = self._queue[0].arrived + self._interval
            while not self._closing and self._queued_bytes < self._max_group_bytes:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            group, self._queue, self._queued_bytes = self._queue, [], 0
            return group

    def _run(self) -> None:
        while (group := self._take_group()) is not None:
            started = time.monotonic()
            try:
                ends = self._writer.append([w.record for w in group])
            except OSError as exc:
                log.error("spool write/fsync failed for %d request(s): %s", len(group), exc)
                self._fail(group, exc)
                continue
            except BaseException as exc:  # a bug: never leave a request hanging on its future
                log.exception("spool committer failed")
                self._fail(group, exc)
                continue
            if self._on_commit is not None:
                self._on_commit(time.monotonic() - started, len(group))
            pairs = list(zip(group, ends, strict=True))
            try:
                self._on_durable(pairs)
            except BaseException:  # durable already; replay after restart will load it
                log.exception("handing durable records to the loader failed")
            for w, end in pairs:
                w.future.set_result(end)

    def _fail(self, group: list[PendingWrite], exc: BaseException) -> None:
        try:
            self._on_failed(group, exc)
        finally:
            for w in group:
                if not w.future.done():
                    w.future.set_exception(exc)
