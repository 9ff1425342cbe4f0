"""Keeping the search index current: run on the writer thread between loads (ingest/store/writer.py).

Two sources of work:
- `search_pending` (ingest/search/pending.py): every load queues its new spans; a step indexes the
  oldest pending spans, in chunks sized to its time budget, and deletes their rows once the index
  has committed them;
- a rebuild (`reindex`, or a missing index file next to a store that has spans): the stored spans are
  read by start-time windows, oldest first, and the window's end is committed with its documents, so
  a rebuild survives restarts and its progress is visible (`rebuild_through`).

A failing step (disk full, a locked file) is logged and retried with backoff; it never stops loading,
and nothing is lost: the pending rows stay until the index has them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import duckdb

from ingest.clock import utcnow as _now
from ingest.search import pending
from ingest.search.index import Doc, SearchIndex, from_us, span_docs, to_us

log = logging.getLogger(__name__)

STEP_BUDGET_S = 0.25  # one step's time on the writer thread before loads get their turn again
STEP_INTERVAL_S = 1.0  # under sustained load, a step at least this often
# ... unless the writer has just paused (upkeep, checkpoint) while spans wait: then the step waits for the
# next load, but never longer than this, so the index's lag stays bounded under any load.
OVERDUE_S = 2 * STEP_INTERVAL_S
RETRY_MAX_S = 30.0
REBUILD_WINDOW = timedelta(hours=1)  # first window; doubled or halved to hold ~REBUILD_ROWS spans
REBUILD_ROWS = 20_000
# Pending spans are indexed in chunks sized to what the step's budget has left at the measured rate
# (spans/s, a moving average over chunks): a chunk of whole loads (up to 50,000 spans each) took 1-2 s
# at ~50 us a span, held every queued load behind it, and under sustained ingest took most of the
# writer's time; now a step ends within about its budget, so under load the index takes at most
# about STEP_BUDGET_S of every STEP_INTERVAL_S of the writer thread.
MIN_CHUNK_SPANS = 500
FIRST_RATE_SPANS_S = 10_000.0
PRUNE_INTERVAL_S = 3600.0

META_REBUILD_NEXT = "rebuild_next_us"
META_REBUILD_END = "rebuild_end_us"
META_BUILT_AT = "built_at"


def _docs(rows: Iterable[tuple]) -> Iterable[Doc]:
    for project, trace_id, span_id, start, status_message, attributes, events in rows:
        yield from span_docs(project, trace_id, span_id, start, status_message, attributes, events)


class SearchIndexer:
    """The writer thread's handle on the index. Not thread-safe: the writer thread calls everything."""

    def __init__(self, index: SearchIndex, retention_days: int = 0) -> None:
        self.index = index
        self.retention_days = retention_days
        self.work = True  # unknown until the first step looked
        self.failed: str | None = None  # the last step's error, until a step succeeds
        self._retry_at = 0.0
        self._backoff = 1.0
        self._last_step = 0.0
        self._last_prune = 0.0
        self._window = REBUILD_WINDOW
        self.indexed = 0
        self._spans_per_s = FIRST_RATE_SPANS_S  # measured by every chunk; sizes the next one

    def note_loaded(self) -> None:
        self.work = True

    def due(self, idle: bool, overdue_only: bool = False) -> bool:
        """Whether a step should run now: idle, or STEP_INTERVAL_S since the last one under load.
        `overdue_only` (the writer just paused while spans wait): only once OVERDUE_S have passed."""
        now = time.monotonic()
        if not self.work or now < self._retry_at:
            return False
        if overdue_only:
            return now - self._last_step >= OVERDUE_S
        return idle or now - self._last_step >= STEP_INTERVAL_S

    def wait_s(self) -> float:
        """Seconds until a step is due when the writer is idle (inf: no work known)."""
        if not self.work:
            return float("inf")
        return max(0.0, self._retry_at - time.monotonic())

    def step(self, conn: duckdb.DuckDBPyConnection) -> int:
        """Index for up to STEP_BUDGET_S; returns documents added. Errors are logged, retried later."""
        self._last_step = time.monotonic()
        try:
            added = self._step(conn)
        except Exception as exc:  # noqa: BLE001 - a DuckDB, SQLite or disk error must never stop the writer
            self.failed = f"{type(exc).__name__}: {exc}"
            self._retry_at = time.monotonic() + self._backoff
            log.error("search indexing failed, retrying in %.0f s (nothing is lost): %s", self._backoff, self.failed)
            self._backoff = min(RETRY_MAX_S, self._backoff * 2)
            return 0
        self.failed = None
        self._backoff = 1.0
        self.indexed += added
        return added

    def _step(self, conn: duckdb.DuckDBPyConnection) -> int:
        started = time.monotonic()
        meta = self._ensure_started(conn)
        added = 0
        while (left := STEP_BUDGET_S - (time.monotonic() - started)) > 0:
            chunk_started = time.monotonic()
            rows = pending.take(conn, self._chunk_spans(left))
            if not rows:
                break
            added += self.index.add(_docs(rows))
            pending.done_taken(conn)
            self._note_rate(len(rows), time.monotonic() - chunk_started)
        rebuilding = META_REBUILD_NEXT in meta
        while rebuilding and time.monotonic() - started < STEP_BUDGET_S:
            rebuilding, n = self._rebuild_chunk(conn)
            added += n
        self._maybe_prune()
        self.work = rebuilding or pending.has_pending(conn)
        return added

    def _chunk_spans(self, seconds: float) -> int:
        """Pending spans that fit in `seconds` at the measured indexing rate (within the chunk bounds)."""
        return max(MIN_CHUNK_SPANS, min(REBUILD_ROWS, int(self._spans_per_s * seconds)))

    def _note_rate(self, spans: int, seconds: float) -> None:
        if seconds > 0:
            self._spans_per_s = 0.5 * self._spans_per_s + 0.5 * spans / seconds

    def _ensure_started(self, conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
        """The index's meta; a new index file next to a store with spans starts a rebuild of them."""
        fresh = not self.index.path.exists()
        self.index.writer()
        meta = self.index.meta()
        if fresh or (META_BUILT_AT not in meta and META_REBUILD_NEXT not in meta):
            return self.start_rebuild(conn, clear=False)
        return meta

    def request_rebuild(self, store: Any) -> Future[dict[str, str]]:
        """`start_rebuild` on the store's writer thread (the index's only writer); the API waits on it."""
        return store.run_write(self.start_rebuild)

    def start_rebuild(self, conn: duckdb.DuckDBPyConnection, clear: bool = True) -> dict[str, str]:
        """Index every stored span again, from the oldest (`steplens search reindex`)."""
        if clear:
            self.index.clear()
        else:  # documents already there stay (adding them again is a no-op): count them afresh
            self.index.recount()
        lo, hi = pending.span_extent(conn)
        if lo is None or hi is None:
            values: dict[str, str | None] = {META_BUILT_AT: _now().isoformat(), META_REBUILD_NEXT: None,
                                             META_REBUILD_END: None}
        else:
            values = {META_REBUILD_NEXT: str(to_us(lo)), META_REBUILD_END: str(to_us(hi) + 1), META_BUILT_AT: None}
        self.index.set_meta(values)
        self._window = REBUILD_WINDOW
        self.work = True
        log.info("search index: rebuilding from the stored spans")
        return self.index.meta()

    def _rebuild_chunk(self, conn: duckdb.DuckDBPyConnection) -> tuple[bool, int]:
        meta = self.index.meta()
        if META_REBUILD_NEXT not in meta:
            return False, 0
        lo, end = int(meta[META_REBUILD_NEXT]), int(meta[META_REBUILD_END])
        hi = min(end, lo + self._window // timedelta(microseconds=1))
        rows = pending.span_rows(conn, from_us(lo), from_us(hi))
        if len(rows) > REBUILD_ROWS and self._window > timedelta(seconds=1):
            self._window /= 2
        elif len(rows) < REBUILD_ROWS // 4:
            self._window *= 2
        finished = hi >= end
        values = {META_BUILT_AT: _now().isoformat()} if finished else {META_REBUILD_NEXT: str(hi)}
        added = self.index.add(_docs(rows), meta=values)
        if finished:
            self.index.set_meta({META_REBUILD_NEXT: None, META_REBUILD_END: None})
            log.info("search index: rebuild finished")
        return not finished, added

    def _maybe_prune(self) -> None:
        if self.retention_days <= 0 or time.monotonic() - self._last_prune < PRUNE_INTERVAL_S:
            return
        self._last_prune = time.monotonic()
        self.index.prune_before(_now() - timedelta(days=self.retention_days))
