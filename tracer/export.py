"""Export that can never hurt the agent: bounded, counted, and abandonable.

Two thin wrappers around the SDK's own pieces share one `ExportCounters`:
- `GatedProcessor` sits in front of the `BatchSpanProcessor`. It counts every ended span and
  refuses (and counts) a span when the batch queue is full, so the SDK's queue never silently
  overwrites old spans and the agent's `span.end()` stays O(1) whatever the backend does.
- `CountingExporter` wraps the real exporter: counts exported / failed spans, turns exceptions
  into FAILURE, and after a shutdown deadline discards batches instead of sending them, so a hung
  backend cannot hold the process at exit.

`bounded(fn, timeout_s)` runs a blocking SDK call (shutdown, force_flush) on a daemon thread and
stops waiting after the timeout: the SDK's own timeouts there are not honoured in all versions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExportStats:
    """What happened to the spans handed to the export pipeline.

    `ended` = `exported` + `failed` + `dropped` + `pending` at every moment.
    - exported: accepted by the backend;
    - failed: sent (or tried) but the backend refused, errored, timed out or was unreachable;
    - dropped: never sent: the queue was full, the pipeline was shut down, or they were still
      queued when shutdown gave up;
    - pending: queued or being sent right now.
    """

    ended: int
    exported: int
    failed: int
    dropped: int
    pending: int
    last_error: str | None


class ExportCounters:
    """Shared, lock-protected counters. The lock is held for a few integer updates only."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self.ended = 0
        self.rejected = 0  # refused at the gate: queue full or pipeline closed
        self.handed = 0  # entered the exporter
        self.exported = 0
        self.failed = 0
        self.discarded = 0  # entered the exporter after the shutdown deadline, not sent
        self.last_error: str | None = None
        self.closed = False
        self.deadline: float | None = None  # monotonic; exports after it are discarded

    def admit(self) -> bool:
        """Count one ended span; False when it must be dropped (queue full or closed)."""
        with self._lock:
            self.ended += 1
            if self.closed or (self.ended - self.rejected - 1) - self.handed >= self.capacity:
                self.rejected += 1
                return False
            return True

    def close(self) -> None:
        with self._lock:
            self.closed = True

    def snapshot(self) -> ExportStats:
        with self._lock:
            dropped = self.rejected + self.discarded
            if self.closed:
                # Admitted but never handed to the exporter: abandoned in the queue at shutdown.
                dropped += (self.ended - self.rejected) - self.handed
            pending = self.ended - self.exported - self.failed - dropped
            return ExportStats(
                ended=self.ended,
                exported=self.exported,
                failed=self.failed,
                dropped=dropped,
                pending=pending,
                last_error=self.last_error,
            )

    def begin_export(self, n: int) -> bool:
        """Count a batch entering the exporter; False when it arrives after the deadline."""
        with self._lock:
            self.handed += n
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.discarded += n
                return False
            return True

    def end_export(self, n: int, ok: bool, error: str | None = None) -> None:
        with self._lock:
            if ok:
                self.exported += n
            else:
                self.failed += n
                self.last_error = error


class GatedProcessor(SpanProcessor):
    """Counts ended spans and keeps the inner batch queue from overflowing."""

    def __init__(self, inner: SpanProcessor, counters: ExportCounters) -> None:
        self._inner = inner
        self._counters = counters

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is None or not ctx.trace_flags.sampled:
            return
        if self._counters.admit():
            self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class CountingExporter(SpanExporter):
    """Counts outcomes of the wrapped exporter; never raises into the SDK's worker."""

    def __init__(self, inner: SpanExporter, counters: ExportCounters) -> None:
        self.inner = inner
        self._counters = counters

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        n = len(spans)
        if not self._counters.begin_export(n):
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - an exporter bug must not kill the worker
            _log.warning("steplens span export raised %s: %s", type(exc).__name__, exc)
            self._counters.end_export(n, False, f"{type(exc).__name__}: {exc}"[:300])
            return SpanExportResult.FAILURE
        ok = result is SpanExportResult.SUCCESS
        self._counters.end_export(n, ok, None if ok else f"{type(self.inner).__name__} returned {result.name}")
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:  # noqa: BLE001
            _log.warning("steplens exporter shutdown raised %s: %s", type(exc).__name__, exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return self.inner.force_flush(timeout_millis)
        except Exception:  # noqa: BLE001
            return False


def bounded(fn: Callable[[], object], timeout_s: float, name: str) -> bool:
    """Run `fn` on a daemon thread; True if it finished (without raising) within `timeout_s`."""
    outcome: list[bool] = []

    def run() -> None:
        try:
            result = fn()
            outcome.append(result is not False)
        except Exception as exc:  # noqa: BLE001
            _log.warning("steplens %s raised %s: %s", name, type(exc).__name__, exc)
            outcome.append(False)

    thread = threading.Thread(target=run, name=f"steplens-{name}", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout_s))
    if thread.is_alive():
        _log.warning("steplens %s did not finish within %.1fs; abandoned", name, timeout_s)
        return False
    return bool(outcome and outcome[0])
