"""The ONE thread that owns the DuckDB write connection: loads spool records, runs retention and tasks.
Log records (spool kind LOGS) are normalized by ingest/store/logs_load.py and scores (kind SCORES) by
ingest/store/scores_load.py, and committed with the spans.

Why a single writer (datasette style): DuckDB serializes writers anyway and concurrent write
transactions on the same rows conflict; queueing every write through one thread removes conflicts
by construction and lets the loader turn many small requests into large, cheap transactions.

Failure policy (errors are data, nothing silent; ingest/store/failures.py classifies):
- a record that cannot be parsed or normalized, or whose spans DuckDB rejects on their own (loaded
  alone), is moved to `<spool>/dead/` with the error next to it, counted, logged, and the mark
  moves past it; if the dead letter itself cannot be written (disk full) the mark does not move;
- an environmental error (a full disk, I/O, out of memory, the aborted transaction that follows
  one) is retried with backoff, never dead-lettered; the records stay queued (and in the spool) and
  `unwritable` says why, so the store answers 503 and /readyz is not ready until a write succeeds;
- a database DuckDB invalidated (a checkpoint or WAL write that hit a full disk) is closed and
  opened again by the store's `reopen` hook, with backoff, until it works: loading resumes by
  itself when space returns;
- any other fatal DuckDB error stops loading (`failed` is set, readiness goes false); acknowledged
  records stay in the spool and are replayed by the next start.

Analytics upkeep (ingest/store/upkeep.py) is the writer's too: a load only records which traces it
touched; the writer recomputes their analytics rows when it has been idle for `UPKEEP_IDLE_S`, or
every `upkeep_interval_s` under sustained load, many loads' traces in one pass.

Checkpoints are the writer's own (see `CheckpointPolicy`): DuckDB's automatic checkpoint runs inside
whichever COMMIT pushes the WAL over its threshold, stalling that load (and the visibility of every
span queued behind it) by 0.5-0.9 s under load. The writer turns it off and checkpoints when it has
nothing queued, or, under sustained load, when the WAL reaches a hard cap. Durability is unchanged:
a committed transaction is in the fsynced WAL, and acknowledged records are in the spool.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential

from ingest.clock import utcnow
from ingest.search.indexer import SearchIndexer
from ingest.store import deadletter, logs_load, scores_load, upkeep
from ingest.store.failures import Failure, classify, environmental
from ingest.store.loading import LoadResult, load_batch
from ingest.store.retention import DEFAULT_CHUNK_ROWS, retention_chunk
from ingest.store.spool import Position, RecordKind, delete_segments_before, list_segments, read_segment

log = logging.getLogger(__name__)

Normalizer = Callable[[str, ExportTraceServiceRequest, datetime], pa.Table]

# How long the writer waits with nothing queued before an upkeep pass: a pass takes 0.1-0.3 s, and
# starting it in a gap between two requests would hold the next load (and its visibility) behind it.
UPKEEP_IDLE_S = 0.1
# Whole upkeep passes failing in a row on a transient error (memory, I/O) before the next pass is split
# to find a trace that fails alone (ingest/store/upkeep.py run_isolated).
UPKEEP_FAILURES_BEFORE_SPLIT = 3

# Backoff between retries of an environmental failure and between reopen attempts.
RETRY_MIN_S = 0.1
RETRY_MAX_S = 5.0
# Attempts of a multi-record batch that runs out of memory before it is loaded record by record.
BATCH_OOM_ATTEMPTS = 3

Reopener = Callable[[duckdb.DuckDBPyConnection], duckdb.DuckDBPyConnection]


@dataclass(eq=False)
class LoadItem:
    """One acknowledged spool record on its way into DuckDB.

    Live records usually arrive already normalized (`table`, built before the ack in a worker thread,
    so this thread only runs DuckDB); otherwise the request object or the raw payload is normalized here.
    """

    seq: int
    project: str
    request: ExportTraceServiceRequest | None
    payload: bytes | None
    nbytes: int
    nspans: int
    end: Position
    table: pa.Table | None = None
    kind: RecordKind = RecordKind.TRACES  # LOGS: `payload` is an ExportLogsServiceRequest (logs_load)

    def parsed(self) -> ExportTraceServiceRequest:
        if self.request is not None:
            return self.request
        return ExportTraceServiceRequest.FromString(self.payload or b"")

    def raw(self) -> bytes:
        return self.payload if self.payload is not None else self.parsed().SerializeToString()


@dataclass(frozen=True)
class CheckpointPolicy:
    """When the writer checkpoints (DuckDB's automatic checkpoint is disabled while it runs).

    `idle_wal_bytes`: checkpoint once nothing is queued and the WAL is at least this big (small
    enough that a restart replays little, big enough that a trickle of spans does not checkpoint on
    every load). Under load: once `rows` spans were stored since the last checkpoint, or the WAL
    reached `max_wal_bytes` (a cap on memory and restart time whatever the span size).

    Why rows: a checkpoint writes the spans table's new rows in row groups, and a partly filled row
    group written by one checkpoint is read back and rewritten by the next; checkpointing once per
    row group of new spans (the server's row groups are small, ingest/store/database.py) writes
    each row group once. Every load waits for a checkpoint, so the longest one is what limits how
    soon a span is queryable. 0 for both byte limits keeps DuckDB's automatic checkpoint.
    """

    idle_wal_bytes: int = 32 * 1024 * 1024
    max_wal_bytes: int = 256 * 1024 * 1024
    rows: int = 16_384

    @property
    def enabled(self) -> bool:
        return self.idle_wal_bytes > 0 or self.max_wal_bytes > 0


@dataclass
class WriterHooks:
    """How the writer reports what it did (the store turns these into stats and metrics)."""

    loaded: Callable[[list[LoadItem], LoadResult, float], None]
    dead_lettered: Callable[[LoadItem, BaseException], None]
    retention: Callable[[int, int], None]
    upkept: Callable[[int, float], None] | None = None  # (traces recomputed, seconds)
    checkpointed: Callable[[float], None] | None = None  # (seconds)
    upkeep_isolated: Callable[[str], None] | None = None  # (error class) a trace's upkeep set aside
    quarantined: Callable[[int], None] | None = None  # traces set aside now


class Writer:
    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection,
        normalize: Normalizer,
        spool_dir: Path,
        hooks: WriterHooks,
        load_batch_spans: int,
        retention_days: int,
        retention_interval_s: float,
        retention_chunk_rows: int = DEFAULT_CHUNK_ROWS,
        wal_path: Path | None = None,
        checkpoints: CheckpointPolicy | None = None,
        upkeep_interval_s: float = 1.0,
        upkeep_max_traces: int = 50_000,
        reopen: Reopener | None = None,
        indexer: SearchIndexer | None = None,
    ) -> None:
        self._conn = conn
        self._indexer = indexer  # the full-text index (ingest/search/indexer.py), stepped between loads
        self._reopen = reopen
        # why the database cannot be written right now (None: it can); read by the store for 503s
        self.unwritable: str | None = None
        self._reopen_due: float | None = None
        self._reopen_backoff = RETRY_MIN_S
        self._wal_path = wal_path
        self._checkpoints = checkpoints if wal_path is not None and checkpoints is not None else CheckpointPolicy(0, 0)
        self._configure(conn)
        self.checkpoints = 0
        self._rows_since_checkpoint = 0
        self._normalize = normalize
        self._spool_dir = spool_dir
        self._hooks = hooks
        self._load_batch_spans = max(1, load_batch_spans)
        self._retention_days = retention_days
        self._retention_interval = max(0.0, retention_interval_s)
        self._retention_chunk_rows = retention_chunk_rows
        self._cond = threading.Condition()
        self._items: deque[LoadItem] = deque()
        self._tasks: list[tuple[Callable[[duckdb.DuckDBPyConnection], Any], Future[Any]]] = []
        self._closing = False
        self._handed_upto = 0
        self._loaded_upto = 0
        self._next_retention = time.monotonic() if retention_days > 0 else float("inf")
        self._retention_waiters: list[Future[int]] = []
        self._retention_active = False
        self._retention_deleted = 0
        self._deleted_before = 0
        self._upkeep_interval = max(0.0, upkeep_interval_s)
        self._upkeep_max_traces = max(1, upkeep_max_traces)
        self._upkeep_needed = upkeep.pending(conn) > 0  # a crash may have left traces waiting
        self._quarantine_due = time.monotonic()  # set-aside traces of a previous run: look at once
        self.upkeep_quarantined = 0
        self._upkeep_next = time.monotonic()
        self._idle_since = time.monotonic()
        # -1: traces a previous process loaded still await upkeep, so even "nothing handed over yet"
        # (seq 0) is not current until a pass ran
        self._upkept_upto = -1 if self._upkeep_needed else 0
        self.upkeep_passes = 0
        self._upkeep_failures = 0  # whole passes failed in a row on environmental errors
        self.last_upkeep_s = 0.0
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="steplens-duckdb-writer", daemon=True)

    def _configure(self, conn: duckdb.DuckDBPyConnection) -> None:
        if self._checkpoints.enabled:
            # the largest threshold DuckDB accepts in practice; the writer checkpoints itself
            conn.execute("SET checkpoint_threshold = '1TB'")

    # ---- producer side (committer thread, store) -------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def put(self, items: list[LoadItem]) -> None:
        with self._cond:
            self._items.extend(items)
            if items:
                self._handed_upto = items[-1].seq
            self._cond.notify_all()

    def call(self, fn: Callable[[duckdb.DuckDBPyConnection], Any]) -> Future[Any]:
        """Run `fn(conn)` on the writer thread between loads (admin work, tests)."""
        fut: Future[Any] = Future()
        with self._cond:
            if self._closing:
                fut.set_exception(RuntimeError("the writer is closed"))
                return fut
            self._tasks.append((fn, fut))
            self._cond.notify_all()
        return fut

    def request_retention(self) -> Future[int]:
        """Start a retention sweep now; the future gets the number of spans it deleted."""
        fut: Future[int] = Future()
        with self._cond:
            if self._retention_days <= 0:
                fut.set_result(0)
                return fut
            self._retention_waiters.append(fut)
            self._next_retention = time.monotonic()
            self._cond.notify_all()
        return fut

    def wait_loaded(self, timeout: float) -> bool:
        """True once everything handed over before the call is loaded AND its analytics are up to date."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._handed_upto
            while self._loaded_upto < target or self._upkept_upto < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.failed is not None:
                    return False
                self._cond.wait(remaining)
            return True

    def pending_items(self) -> int:
        with self._cond:
            return len(self._items)

    def close(self, timeout: float | None = None) -> None:
        """Load everything already handed over, then stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # ---- replay (called before start, on the starting thread) -------------------------------

    def replay(self, start: Position, first_seq: int) -> int:
        """Load every valid spool record after `start`; returns how many records were replayed."""
        batch: list[LoadItem] = []
        spans = 0
        seq = first_seq
        count = 0
        for segment in list_segments(self._spool_dir):
            if segment < start.segment:
                continue
            offset = start.offset if segment == start.segment else 0
            for record in read_segment(self._spool_dir, segment, offset):
                seq += 1
                request: ExportTraceServiceRequest | None = None
                if record.kind is RecordKind.LOGS:
                    n = logs_load.count(record.payload)
                elif record.kind is RecordKind.SCORES:
                    n = scores_load.count(record.payload)
                else:
                    try:
                        request = ExportTraceServiceRequest.FromString(record.payload)
                    except Exception:  # noqa: BLE001 - _load dead-letters it with the real parse error
                        request = None
                    n = 0 if request is None else count_spans(request)
                # nbytes 0: replayed records were never counted in the queue budget
                batch.append(
                    LoadItem(seq, record.project, request, record.payload, 0, n, record.end, kind=record.kind)
                )
                spans += n
                count += 1
                if spans >= self._load_batch_spans:
                    self._load(batch)
                    batch, spans = [], 0
        if batch:
            self._load(batch)
        with self._cond:
            self._handed_upto = self._loaded_upto = max(self._loaded_upto, seq)
            if not self._upkeep_needed:
                self._upkept_upto = self._loaded_upto
        return count

    # ---- the thread ---------------------------------------------------------------------------

    def _retention_due(self) -> bool:
        return self._retention_active or time.monotonic() >= self._next_retention

    def _take_batch(self) -> list[LoadItem]:
        batch: list[LoadItem] = []
        spans = 0
        while self._items and (not batch or spans + self._items[0].nspans <= self._load_batch_spans):
            item = self._items.popleft()
            batch.append(item)
            spans += item.nspans
        return batch

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug here must not leave acks hanging without a trace
            log.exception("the DuckDB writer thread crashed")
            self._fail(exc)

    def _reopen_wait(self) -> float:
        """Seconds until the next attempt to reopen an invalidated database (inf: none pending)."""
        if self._reopen_due is None or self.failed is not None:
            return float("inf")
        return max(0.0, self._reopen_due - time.monotonic())

    def _index_wait(self) -> float:
        """Seconds until the search index's next step is due while idle (inf: nothing to index)."""
        if self._indexer is None or self.failed is not None or self.unwritable is not None:
            return float("inf")
        return self._indexer.wait_s()

    def _spans_waiting(self) -> bool:
        with self._cond:
            return bool(self._items)

    def _index_step(self, idle: bool, after_pause: bool = False) -> None:
        """Index pending spans: when idle, or every few seconds under sustained load, so its lag stays
        bounded. `after_pause`: an upkeep pass or a checkpoint just ran; if spans wait, step only when
        overdue (stacked pauses add up in the visibility of everything queued)."""
        if self._indexer is None or self.failed is not None or self.unwritable is not None:
            return
        waiting = self._spans_waiting()
        idle = idle and not waiting
        yield_to_loads = after_pause and waiting
        if not self._indexer.due(idle, overdue_only=yield_to_loads):
            return
        started = time.monotonic()
        added = self._indexer.step(self._conn)
        why = "idle" if idle else "overdue after a pause while spans wait" if yield_to_loads else "interval"
        log.debug("search step (%s): %d document(s) in %.3f s", why, added, time.monotonic() - started)

    def _upkeep_wait(self) -> float:
        """Seconds until an upkeep pass (or a set-aside trace's retry) is due (0: now; inf: nothing to do).
        Caller holds the lock."""
        if self.failed is not None or self.unwritable is not None:
            return float("inf")  # a write that would fail anyway; the writable notification wakes the loop
        now = time.monotonic()
        quarantine = max(0.0, self._quarantine_due - now)
        if not self._upkeep_needed:
            return quarantine
        due = self._upkeep_next if self._items else min(self._upkeep_next, self._idle_since + UPKEEP_IDLE_S)
        return min(quarantine, max(0.0, due - now))

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not (
                    self._tasks
                    or self._closing
                    or (self.failed is None and (self._items or self._retention_due()))
                    or self._upkeep_wait() == 0.0
                    or self._reopen_wait() == 0.0
                    or self._index_wait() == 0.0
                ):
                    wait = min(60.0, self._next_retention - time.monotonic(), self._upkeep_wait(), self._reopen_wait(),
                               self._index_wait())
                    self._cond.wait(max(0.01, wait))
                reopen_due = self._reopen_wait() == 0.0
                tasks, self._tasks = self._tasks, []
                batch = self._take_batch() if self.failed is None else []
                upkeep_due = not batch and self._upkeep_wait() == 0.0
                if self._closing and not batch and not tasks and (not self._items or self.failed is not None):
                    break
            if reopen_due:
                self._try_reopen()
            for fn, fut in tasks:
                try:
                    fut.set_result(fn(self._conn))
                except BaseException as exc:
                    fut.set_exception(exc)
            upkept = False
            if batch:
                self._load(batch)
                with self._cond:
                    if not self._items:
                        self._idle_since = time.monotonic()
                    due_anyway = self._upkeep_wait() == 0.0
                if due_anyway and self._items:  # sustained load: the interval has passed
                    self._upkeep()
                    upkept = True
            elif upkeep_due:
                self._upkeep()
                upkept = True
            if self.failed is None and not self._closing and self._retention_due():
                self._retention_step()
            # One pause per load while spans wait: an upkeep pass, a checkpoint and a search step back to back
            # would add up in the visibility of everything queued; what is skipped goes after the next load
            # (a search step only until it is overdue, so the index's lag stays bounded under any load).
            paused = upkept
            if self.failed is None and self._checkpoints.enabled and not (paused and self._spans_waiting()):
                paused = self._maybe_checkpoint() or paused
            self._index_step(idle=not batch and not upkept, after_pause=paused)
        if self._upkeep_needed and self.failed is None:
            self._upkeep()  # leave the analytics current at shutdown (what is left waits in the table)
        with self._cond:
            waiters, self._retention_waiters = self._retention_waiters, []
        for fut in waiters:
            fut.set_exception(RuntimeError("the writer closed before the retention sweep finished"))

    # ---- loading --------------------------------------------------------------------------

    def _load(self, batch: list[LoadItem]) -> None:
        started = time.monotonic()
        now = utcnow()
        parts: list[tuple[LoadItem, pa.Table | None]] = []
        for item in batch:
            if item.table is not None:
                parts.append((item, item.table))
                continue
            try:
                table = self._retrying("normalizing a record", lambda it=item: self._normalize_item(it, now))
            except Exception as exc:  # noqa: BLE001 - a poison record must not stop the loader
                if environmental(exc):
                    return  # closing while it keeps failing: the spool keeps the records
                if not self._dead_letter(item, exc):
                    return
                parts.append((item, None))
                continue
            parts.append((item, table))
        tables = [t for i, t in parts if t is not None and t.num_rows and i.kind is RecordKind.TRACES]
        table = pa.concat_tables(tables, promote_options="permissive") if tables else None
        logs = logs_load.concat([t for i, t in parts if t is not None and i.kind is RecordKind.LOGS])
        scores = scores_load.concat([t for i, t in parts if t is not None and i.kind is RecordKind.SCORES])
        try:
            # a batch that keeps running out of memory may fit record by record: a few tries, then smaller
            result = self._load_retrying(
                table, batch[-1].end, now, logs, give_up_after=BATCH_OOM_ATTEMPTS if len(batch) > 1 else None,
                scores=scores,
            )
        except Exception as exc:
            kind = classify(exc)
            if kind is Failure.FATAL:
                self._fail(exc)
            elif kind is Failure.POISON:
                log.warning("batch of %d records rejected by DuckDB (%s); loading them one by one", len(batch), exc)
                self._load_one_by_one(parts, now, started)
            elif not self._closing and _out_of_memory(exc):
                log.warning("batch of %d records keeps running out of memory; loading them one by one", len(batch))
                self._load_one_by_one(parts, now, started)
            # otherwise TRANSIENT/REOPEN while closing: the spool keeps the records
            return
        self._finish(batch, result, started)

    def _normalize_item(self, item: LoadItem, now: datetime) -> pa.Table:
        """The rows of one record, by its kind: spans through the normalizer, log records through
        ingest/store/logs_load.py."""
        if item.kind is RecordKind.LOGS:
            return logs_load.normalize(item.project, item.raw(), now)
        if item.kind is RecordKind.SCORES:
            return scores_load.normalize(item.project, item.raw(), now)
        return self._normalize(item.project, item.parsed(), now)

    def _load_one_by_one(self, parts: list[tuple[LoadItem, pa.Table | None]], now: datetime, started: float) -> None:
        for item, table in parts:
            logs = table if item.kind is RecordKind.LOGS else None
            scores = table if item.kind is RecordKind.SCORES else None
            spans = table if item.kind is RecordKind.TRACES else None
            try:
                result = self._load_retrying(spans, item.end, now, logs, scores=scores)
            except Exception as exc:
                kind = classify(exc)
                if kind is Failure.FATAL:
                    self._fail(exc)
                    return
                if kind is not Failure.POISON:
                    return  # closing while the database keeps failing: the spool keeps the records
                if not self._dead_letter(item, exc):
                    return  # the dead letter could not be written: the mark stays before the record
                try:
                    self._load_retrying(None, item.end, now)
                except Exception as exc2:  # noqa: BLE001 - moving the mark alone cannot be the record's fault
                    if classify(exc2) is Failure.FATAL:
                        self._fail(exc2)
                    return
                result = LoadResult(received=0, inserted=0)
            self._finish([item], result, started)

    def _load_retrying(
        self,
        table: pa.Table | None,
        end: Position,
        now: datetime,
        logs: pa.Table | None = None,
        give_up_after: int | None = None,
        scores: pa.Table | None = None,
    ) -> LoadResult:
        return self._retrying(
            "DuckDB load", lambda: load_batch(self._conn, table, end, now, logs, scores), give_up_after
        )

    def _retrying(self, what: str, fn: Callable[[], Any], give_up_after: int | None = None) -> Any:
        """`fn()`, retried with backoff while it fails for an environmental reason (until it works, or
        a few attempts once closing, or `give_up_after` attempts of running out of memory); an
        invalidated database is reopened between attempts."""

        def stop(state: RetryCallState) -> bool:
            if self._closing and state.attempt_number >= 3:
                return True
            exc = state.outcome.exception() if state.outcome is not None else None
            return give_up_after is not None and state.attempt_number >= give_up_after and _out_of_memory(exc)

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            assert exc is not None
            self._mark_unwritable(exc)
            # one line per doubling of the wait at most: a disk full for an hour is not a log flood
            if state.attempt_number <= 3 or state.attempt_number % 10 == 0:
                log.error("%s failed (attempt %d), retrying with backoff: %s", what, state.attempt_number, exc)
            if classify(exc) is Failure.REOPEN:
                self._try_reopen()

        for attempt in Retrying(
            retry=retry_if_exception(environmental),
            wait=wait_exponential(multiplier=RETRY_MIN_S, max=RETRY_MAX_S),
            stop=stop,
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                result = fn()
                self._mark_writable()
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    # ---- environmental failures: unwritable state, reopening --------------------------------

    def _mark_unwritable(self, exc: BaseException) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        if self.unwritable is None:
            log.error("the database cannot be written; exports get 503 until it can: %s", reason)
        with self._cond:
            self.unwritable = reason
            if classify(exc) is Failure.REOPEN and self._reopen_due is None:
                self._reopen_due = time.monotonic()
            self._cond.notify_all()

    def _mark_writable(self) -> None:
        if self.unwritable is None:
            return
        with self._cond:
            if self._reopen_due is not None:
                return  # still invalidated: only a reopen clears it
            self.unwritable = None
            self._cond.notify_all()
        log.warning("the database can be written again; loading resumed")

    def _try_reopen(self) -> bool:
        """Close the invalidated database and open it again (then prove it can write); backoff on failure."""
        if self._reopen is None:
            self._fail(RuntimeError(f"the database was invalidated and cannot be reopened: {self.unwritable}"))
            return False
        try:
            conn = self._reopen(self._conn)
            self._conn = conn
            self._configure(conn)
            conn.execute("CHECKPOINT")  # folds in the WAL the reopen replayed: the proof the disk takes writes
            pending = upkeep.pending(conn)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the next attempt is later
            if classify(exc) is Failure.FATAL and not isinstance(exc, duckdb.FatalException):
                self._fail(exc)
                return False
            with self._cond:
                self.unwritable = f"{type(exc).__name__}: {exc}"
                self._reopen_due = time.monotonic() + self._reopen_backoff
                self._reopen_backoff = min(RETRY_MAX_S, self._reopen_backoff * 2)
            log.error("reopening the database failed, next attempt in %.1f s: %s", self._reopen_backoff, exc)
            return False
        log.warning("the database was reopened after: %s", self.unwritable)
        with self._cond:
            self._reopen_due = None
            self._reopen_backoff = RETRY_MIN_S
            self.unwritable = None
            if pending:  # the connection-local staging tables went with the old connection
                self._upkeep_needed = True
            self._cond.notify_all()
        return True

    def _finish(self, items: list[LoadItem], result: LoadResult, started: float) -> None:
        log.debug("loaded %d record(s), %d span(s) in %.3f s", len(items), result.received, time.monotonic() - started)
        segment = items[-1].end.segment
        if segment > self._deleted_before:
            delete_segments_before(self._spool_dir, segment)
            self._deleted_before = segment
        self._hooks.loaded(items, result, time.monotonic() - started)
        self._rows_since_checkpoint += result.inserted
        if result.inserted and self._indexer is not None:
            self._indexer.note_loaded()
        with self._cond:
            if result.inserted and not self._upkeep_needed:
                self._upkeep_needed = True
                self._upkeep_next = time.monotonic() + self._upkeep_interval
            self._loaded_upto = max(self._loaded_upto, items[-1].seq)
            if not self._upkeep_needed:
                self._upkept_upto = self._loaded_upto
            self._cond.notify_all()

    def _dead_letter(self, item: LoadItem, exc: BaseException) -> bool:
        """Set a poison record aside (ingest/store/deadletter.py); False when closing before it could
        be written (the mark then stays before it and the next start tries again)."""
        log.error(
            "spool record %s/%d (project %r, %d spans) cannot be loaded and goes to the dead-letter directory: "
            "%s: %s",
            item.end.segment, item.end.offset, item.project, item.nspans, type(exc).__name__, exc,
        )
        try:
            self._retrying(
                "writing a dead letter",
                lambda: deadletter.write(
                    self._spool_dir, item.end, item.project, item.raw(), item.nspans, exc, item.kind
                ),
            )
        except Exception as write_error:  # noqa: BLE001 - only when closing: the record stays in the spool
            log.error("dead letter for spool record %s/%d not written: %s", item.end.segment, item.end.offset, write_error)
            return False
        self._hooks.dead_lettered(item, exc)
        return True

    def _fail(self, exc: BaseException) -> None:
        log.critical("DuckDB failed fatally; loading stops, acknowledged data stays in the spool: %s", exc)
        with self._cond:
            self.failed = exc
            self._cond.notify_all()

    # ---- analytics upkeep ----------------------------------------------------------------------

    def _upkeep(self) -> None:
        """One upkeep pass; on failure the traces stay pending and the next try is an interval later."""
        with self._cond:
            covers = self._loaded_upto  # everything loaded so far is in upkeep_pending
        started = time.monotonic()
        try:
            result = self._upkeep_pass() if self._upkeep_needed else None
            self._retry_quarantined()
        except duckdb.Error as exc:
            kind = classify(exc)
            if kind is Failure.FATAL:
                self._fail(exc)
                return
            if kind is Failure.REOPEN:
                self._mark_unwritable(exc)
            elif kind is Failure.TRANSIENT:
                self._upkeep_failures += 1
            log.error("analytics upkeep failed, will retry in %.1f s: %s", self._upkeep_interval, exc)
            with self._cond:
                self._upkeep_next = time.monotonic() + self._upkeep_interval
                self._quarantine_due = max(self._quarantine_due, self._upkeep_next)
            return
        if result is None:
            return
        self.upkeep_passes += 1
        self.last_upkeep_s = time.monotonic() - started
        if self._hooks.upkept is not None:
            self._hooks.upkept(result.traces, self.last_upkeep_s)
        log.debug(
            "upkeep pass: %d trace(s) (%d read back) in %.3f s, %d left",
            result.traces, result.stale, self.last_upkeep_s, result.remaining,
        )
        with self._cond:
            # a backlog left (e.g. after a replay) goes on at once while idle, an interval later under load
            self._upkeep_next = time.monotonic() + self._upkeep_interval
            if not result.remaining:
                self._upkeep_needed = False
                self._upkept_upto = max(self._upkept_upto, covers)
            self._cond.notify_all()

    def _upkeep_pass(self) -> upkeep.UpkeepResult:
        """A pass with failing traces isolated (ingest/store/upkeep.py): one log line per trace set aside."""
        # A pass that keeps failing on memory (or another transient cause) is split like a poison one:
        # if one trace alone exhausts DuckDB's memory limit, it is set aside and retried with backoff
        # instead of holding every other trace's and project's analytics back forever.
        isolate = (upkeep.ISOLATED_AFTER_REPEATED_FAILURES if self._upkeep_failures >= UPKEEP_FAILURES_BEFORE_SPLIT
                   else upkeep.ISOLATED_FAILURES)
        outcome = upkeep.run_isolated(self._conn, self._upkeep_max_traces, utcnow(), isolate)
        self._upkeep_failures = 0
        for (project, trace_id), exc in outcome.isolated:
            log.error(
                "analytics upkeep of trace %s (project %r) fails on its own data and is set aside (retried alone "
                "with backoff; other traces go on): %s: %s",
                trace_id, project, type(exc).__name__, exc,
            )
            if self._hooks.upkeep_isolated is not None:
                self._hooks.upkeep_isolated(type(exc).__name__)
        if outcome.isolated:
            self._note_quarantine()
        return outcome.result

    def _retry_quarantined(self) -> None:
        """Retry, each alone, the set-aside traces whose backoff has passed."""
        if time.monotonic() < self._quarantine_due:
            return
        for (project, trace_id), attempts, reason in upkeep.retry_quarantined(self._conn, utcnow()):
            if reason is None:
                log.warning("analytics upkeep of set-aside trace %s (project %r) passed on attempt %d", trace_id, project, attempts + 1)
            else:
                log.warning(
                    "analytics upkeep of set-aside trace %s (project %r) failed again (attempt %d), next try later: %s",
                    trace_id, project, attempts, reason,
                )
        self._note_quarantine()

    def _note_quarantine(self) -> None:
        next_at, count = upkeep.quarantine_state(self._conn)
        self.upkeep_quarantined = count
        if self._hooks.quarantined is not None:
            self._hooks.quarantined(count)
        due = float("inf") if next_at is None else time.monotonic() + max(0.0, (next_at - utcnow()).total_seconds())
        with self._cond:
            self._quarantine_due = due
            self._cond.notify_all()

    # ---- checkpoints --------------------------------------------------------------------------

    def _wal_bytes(self) -> int:
        try:
            return self._wal_path.stat().st_size if self._wal_path is not None else 0
        except FileNotFoundError:
            return 0

    def _maybe_checkpoint(self) -> bool:
        """Checkpoint when idle and the WAL is worth folding in, or when it hit the hard cap. True when it
        ran one, even one that failed: either way the writer paused for it."""
        policy = self._checkpoints
        wal = self._wal_bytes()
        with self._cond:
            idle = not self._items
        due = (
            (policy.max_wal_bytes > 0 and wal >= policy.max_wal_bytes)
            or (policy.rows > 0 and self._rows_since_checkpoint >= policy.rows)
            or (idle and policy.idle_wal_bytes > 0 and wal >= policy.idle_wal_bytes)
        )
        if not due:
            return False
        started = time.monotonic()
        try:
            self._conn.execute("CHECKPOINT")
        except duckdb.Error as exc:  # the WAL stays valid; the next idle moment (or a reopen) tries again
            kind = classify(exc)
            if kind is Failure.FATAL:
                self._fail(exc)
                return True
            if kind is Failure.REOPEN or environmental(exc):
                self._mark_unwritable(exc)
            log.error("checkpoint of a %d-byte WAL failed, will retry: %s", wal, exc)
            return True
        self._mark_writable()
        self.checkpoints += 1
        if self._hooks.checkpointed is not None:
            self._hooks.checkpointed(time.monotonic() - started)
        log.debug(
            "checkpointed a %d-byte WAL, %d new spans, in %.2f s (idle=%s)",
            wal, self._rows_since_checkpoint, time.monotonic() - started, idle,
        )
        self._rows_since_checkpoint = 0
        return True

    # ---- retention --------------------------------------------------------------------------

    def _retention_step(self) -> None:
        cutoff = utcnow() - timedelta(days=self._retention_days)
        try:
            chunk = retention_chunk(self._conn, cutoff, self._retention_chunk_rows)
        except duckdb.Error as exc:
            kind = classify(exc)
            if kind is Failure.FATAL:
                self._fail(exc)
                return
            if kind is Failure.REOPEN:
                self._mark_unwritable(exc)
            log.error("retention chunk failed, will retry next interval: %s", exc)
            chunk = None
        if chunk is not None:
            self._retention_deleted += chunk.spans_deleted
            self._hooks.retention(chunk.spans_deleted, chunk.runs_deleted)
        if chunk is not None and not chunk.done:
            self._retention_active = True
            return
        self._retention_active = False
        self._next_retention = time.monotonic() + self._retention_interval
        with self._cond:
            waiters, self._retention_waiters = self._retention_waiters, []
        deleted, self._retention_deleted = self._retention_deleted, 0
        for fut in waiters:
            fut.set_result(deleted)


def _out_of_memory(exc: BaseException | None) -> bool:
    return isinstance(exc, (duckdb.OutOfMemoryException, MemoryError)) or "out of memory" in str(exc).lower()


def count_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
