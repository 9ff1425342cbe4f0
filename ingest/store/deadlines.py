"""One thread that calls each read's interrupt when its time limit runs out.

Why not a `threading.Timer` per read: every read then started a thread, and `Thread.start()` waits
until the new thread has run, a hand-off to the OS scheduler and the GIL on every query API call
(0.2 ms on an idle machine, more on a loaded one). One long-lived thread keeps the deadlines in a
heap instead; a read adds its deadline when it starts and cancels it when it ends.

Why cancelling is final: `cancel()` and the call both hold the deadline's lock, so once `cancel()`
has returned the interrupt can no longer hit the cursor (a finished read's cursor may already serve
nothing, or be closed).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class Deadline:
    """A pending call at a time; `cancel()` makes sure it does not happen (if it has not already)."""

    __slots__ = ("_call", "_done", "_lock")

    def __init__(self, call: Callable[[], None]) -> None:
        self._call = call
        self._done = False
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            self._done = True

    @property
    def cancelled_or_fired(self) -> bool:
        return self._done

    def fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            self._call()


class DeadlineWatcher:
    """Calls each `Deadline` when its time comes, from one daemon thread started on first use."""

    # cancelled deadlines stay in the heap until their time; past this many the heap is rebuilt
    PURGE_AT = 1024

    def __init__(self, name: str = "steplens-read-deadlines") -> None:
        self._name = name
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a forked child has no watcher thread

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def after(self, seconds: float, call: Callable[[], None]) -> Deadline:
        """Call `call()` in `seconds` unless the returned Deadline is cancelled first."""
        deadline = Deadline(call)
        with self._cond:
            if len(self._heap) >= self.PURGE_AT:
                self._heap = [e for e in self._heap if not e[2].cancelled_or_fired]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0][2] is deadline:
                self._cond.notify()  # sooner than what the thread waits for
        return deadline

    def pending(self) -> int:
        """Deadlines neither cancelled nor called yet."""
        with self._cond:
            return sum(not e[2].cancelled_or_fired for e in self._heap)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].cancelled_or_fired:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    due = self._heap[0][0] - time.monotonic()
                    if due <= 0:
                        deadline = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(due)
            try:
                deadline.fire()  # outside the heap's lock: a slow interrupt holds up no other read
            except Exception:  # one failing interrupt must not stop every later one
                log.exception("a read's time-limit interrupt failed")
