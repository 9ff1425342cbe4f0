"""A byte budget for request bodies being read and decoded at the same time.

Why: the store bounds what it has *accepted*; this bounds what the receiver holds *before* that,
so a burst of large bodies is answered 503 + Retry-After instead of exhausting memory. One request
is always admitted when nothing else is in flight, so a lone maximum-size body still works.
"""

from __future__ import annotations

import threading

from ingest.errors import Overloaded


class InflightBudget:
    """Thread-safe counter of bytes held by in-flight requests (taken by the event loop and by
    decode threads)."""

    def __init__(self, limit: int, retry_after: int) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def take(self, n: int, already_held: int = 0) -> None:
        """Reserve `n` more bytes for a request already holding `already_held`, or raise Overloaded."""
        with self._lock:
            others = self._used - already_held
            if others > 0 and self._used + n > self.limit:
                raise Overloaded(
                    "too many request bodies in flight; retry after the Retry-After delay", self.retry_after
                )
            self._used += n

    def give_back(self, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)


class Reservation:
    """The bytes one request holds; `release()` returns them all (idempotent)."""

    def __init__(self, budget: InflightBudget) -> None:
        self._budget = budget
        self.held = 0

    def take(self, n: int) -> None:
        self._budget.take(n, self.held)
        self.held += n

    def release(self) -> None:
        if self.held:
            self._budget.give_back(self.held)
            self.held = 0
