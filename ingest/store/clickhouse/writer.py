"""The ClickHouse store's writer thread: spool records -> ClickHouse, then the spool mark.

Order per batch: insert each record (spans, log records or scores; one deduplicated insert per
record and table, ingest/store/clickhouse/load.py), derive the runs of every trace the records
touched and insert their new versions, then write the spool mark (fsynced) and delete loaded
segments. A crash anywhere before the mark replays the records: their inserts are dropped as
duplicates and their runs are derived again, so every acknowledged span is stored exactly once.

ClickHouse unreachable or refusing is environmental (ingest/store/failures.py): the batch is
retried with backoff, `unwritable` is set (the store answers 503 with Retry-After and /readyz
is not ready) and nothing is dropped; a record that fails on its own goes to the dead letters.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential

from ingest.store import deadletter, logs_load, scores_load
from ingest.store.clickhouse import load
from ingest.store.clickhouse.schema import ANALYTICS_TABLES
from ingest.store.clickhouse.schema_work import WORK_TABLES
from ingest.store.clickhouse.transport import Transport
from ingest.store.failures import environmental
from ingest.store.loading import LoadResult
from ingest.store.spool import Position, RecordKind, delete_segments_before, list_segments, read_segment
from ingest.store.writer import (
    RETRY_MAX_S,
    RETRY_MIN_S,
    LoadItem,
    Normalizer,
    WriterHooks,
    count_spans,
    utcnow,
)

log = logging.getLogger(__name__)

POSITION_FILE = "clickhouse.position"
SPOOL_ID_FILE = "clickhouse.spool-id"
INFLIGHT_FILE = "clickhouse.inflight"


def _fsync_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_position(spool_dir: Path) -> Position:
    """The mark: the spool position after the last record ClickHouse acknowledged (start: 0/0)."""
    try:
        data = json.loads((spool_dir / POSITION_FILE).read_text())
    except FileNotFoundError:
        return Position(0, 0)
    return Position(int(data["segment"]), int(data["offset"]))


def write_position(spool_dir: Path, position: Position) -> None:
    _fsync_write(spool_dir / POSITION_FILE, json.dumps({"segment": position.segment, "offset": position.offset}))


def write_inflight(spool_dir: Path, end: Position) -> None:
    """Record (fsynced) the end of the batch about to be inserted: a replay cuts its first batch
    there, so that batch's inserts carry the same dedup tokens as before the crash."""
    _fsync_write(spool_dir / INFLIGHT_FILE, json.dumps({"segment": end.segment, "offset": end.offset}))


def read_inflight(spool_dir: Path) -> Position | None:
    try:
        data = json.loads((spool_dir / INFLIGHT_FILE).read_text())
    except FileNotFoundError:
        return None
    return Position(int(data["segment"]), int(data["offset"]))


def spool_id(spool_dir: Path) -> str:
    """This spool's identity (made once): part of every dedup token, so two ingest nodes' records
    at the same position never collide."""
    path = spool_dir / SPOOL_ID_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        value = os.urandom(8).hex()
        _fsync_write(path, value)
        return value


class ClickHouseWriter:
    """Same surface as ingest.store.writer.Writer, for SpanStore's submit path and stats."""

    def __init__(
        self,
        connect: Callable[[], Transport],
        database: str,
        normalize: Normalizer,
        spool_dir: Path,
        hooks: WriterHooks,
        *,
        load_batch_spans: int,
        retention_days: int,
        retention_interval_s: float = 3600.0,
    ) -> None:
        self._connect = connect
        self._transport: Transport | None = None
        self._pending_replay: tuple[Position, int] | None = None
        self._db = database
        self._normalize = normalize
        self._spool_dir = spool_dir
        self._hooks = hooks
        self._load_batch_spans = load_batch_spans
        self._retention_days = retention_days
        self._retention_interval_s = retention_interval_s
        self._next_retention = time.monotonic() + retention_interval_s
        self._spool_id = spool_id(spool_dir)
        self._deriver = load.RunDeriver()
        self._cond = threading.Condition()
        self._items: deque[LoadItem] = deque()
        self._tasks: deque[tuple[Callable[[Transport], Any], Future[Any]]] = deque()
        self._handed_upto = 0
        self._loaded_upto = 0
        self._closing = False
        self._deleted_before = 0
        self.failed: BaseException | None = None
        self.unwritable: str | None = None
        self.checkpoints = 0
        self.upkeep_passes = 0
        self.last_upkeep_s = 0.0
        self.upkeep_quarantined = 0
        self._thread = threading.Thread(target=self._run, name="steplens-clickhouse-writer", daemon=True)

    # ---- the surface SpanStore uses ----------------------------------------------------------

    @property
    def transport(self) -> Transport | None:
        """The connection once ClickHouse was reached and migrated (reads share it)."""
        return self._transport

    def connect(self) -> Transport:
        """Connect and migrate (once); raises the client's error when ClickHouse cannot be reached."""
        if self._transport is None:
            self._transport = self._connect()
        return self._transport

    def defer_replay(self, start: Position, first_seq: int, exc: BaseException) -> None:
        """ClickHouse was unreachable at start: the thread connects and replays with backoff, and
        until then `unwritable` says why (submits answer 503, /readyz is not ready)."""
        self._pending_replay = (start, first_seq)
        self._set_unwritable(exc)

    def start(self) -> None:
        self._thread.start()

    def put(self, items: list[LoadItem]) -> None:
        with self._cond:
            self._items.extend(items)
            if items:
                self._handed_upto = items[-1].seq
            self._cond.notify_all()

    def call(self, fn: Callable[[Transport], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._cond:
            if self._closing:
                fut.set_exception(RuntimeError("the writer is closed"))
                return fut
            self._tasks.append((fn, fut))
            self._cond.notify_all()
        return fut

    def request_retention(self) -> Future[int]:
        if self._retention_days <= 0:
            fut: Future[int] = Future()
            fut.set_result(0)
            return fut
        return self.call(self._retention)

    def wait_loaded(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._handed_upto
            while self._loaded_upto < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.failed is not None:
                    return False
                self._cond.wait(remaining)
            return True

    def pending_items(self) -> int:
        with self._cond:
            return len(self._items)

    def close(self, timeout: float | None = None) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._deriver.close()

    def replay(self, start: Position, first_seq: int) -> int:
        """Load every spool record after the mark (before the thread starts); returns how many."""
        batch: list[LoadItem] = []
        spans = 0
        seq = first_seq
        inflight = read_inflight(self._spool_dir)
        cut = inflight if inflight is not None and (inflight.segment, inflight.offset) > (start.segment, start.offset) else None
        for segment in list_segments(self._spool_dir):
            if segment < start.segment:
                continue
            offset = start.offset if segment == start.segment else 0
            for record in read_segment(self._spool_dir, segment, offset):
                seq += 1
                request: ExportTraceServiceRequest | None = None
                n = 0
                if record.kind is RecordKind.TRACES:
                    try:
                        request = ExportTraceServiceRequest.FromString(record.payload)
                        n = count_spans(request)
                    except Exception:  # noqa: BLE001 - _load dead-letters it with the parse error
                        request = None
                batch.append(LoadItem(seq, record.project, request, record.payload, 0, n, record.end, kind=record.kind))
                spans += n
                if cut is not None:  # the batch in flight at the crash, cut where it was
                    if record.end == cut:
                        self._load(batch)
                        batch, spans, cut = [], 0, None
                elif spans >= self._load_batch_spans:
                    self._load(batch)
                    batch, spans = [], 0
        if batch:
            self._load(batch)
        with self._cond:
            self._handed_upto = self._loaded_upto = max(self._loaded_upto, seq)
        return seq - first_seq

    # ---- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self._pending_replay is not None:
                start, first_seq = self._pending_replay
                try:
                    self._retrying("connecting to ClickHouse", self.connect)
                    self.replay(start, first_seq)
                except Exception as exc:  # noqa: BLE001 - closing while unreachable: the spool keeps all
                    if not environmental(exc):
                        raise
                    return
                self._pending_replay = None
            while True:
                with self._cond:
                    while not self._items and not self._tasks and not self._closing and not self._retention_due():
                        self._cond.wait(1.0)
                    if self._closing and not self._items and not self._tasks:
                        return
                    tasks = list(self._tasks)
                    self._tasks.clear()
                    if self._retention_due():
                        self._next_retention = time.monotonic() + self._retention_interval_s
                        tasks.append((self._retention, Future()))  # the periodic sweep (TTL acts on merges)
                    batch: list[LoadItem] = []
                    spans = 0
                    while self._items and (not batch or spans + self._items[0].nspans <= self._load_batch_spans):
                        item = self._items.popleft()
                        batch.append(item)
                        spans += item.nspans
                for fn, fut in tasks:
                    try:
                        fut.set_result(fn(self.connect()))
                    except Exception as exc:  # noqa: BLE001 - the caller gets it
                        log.warning("a task on the ClickHouse writer failed: %s", exc)
                        fut.set_exception(exc)
                if batch and not self._load(batch):
                    return  # closing while ClickHouse keeps failing: the spool keeps the records
        except BaseException as exc:
            log.exception("the ClickHouse writer thread crashed")
            with self._cond:
                self.failed = exc
                self._cond.notify_all()

    def _retention_due(self) -> bool:
        return self._retention_days > 0 and time.monotonic() >= self._next_retention

    def _token(self, item: LoadItem, table: str) -> str:
        return f"steplens:{self._spool_id}:{item.end.segment}:{item.end.offset}:{table}"

    def _rows(self, item: LoadItem) -> pa.Table:
        if item.table is not None:
            return item.table
        now = utcnow()
        if item.kind is RecordKind.LOGS:
            return logs_load.normalize(item.project, item.raw(), now)
        if item.kind is RecordKind.SCORES:
            return scores_load.normalize(item.project, item.raw(), now)
        return self._normalize(item.project, item.parsed(), now)

    def _batch_token(self, records: list[LoadItem], table: str) -> str:
        """The dedup token of one batch insert: the spool positions of the load batch's first and
        last record (one record: that record's token). The batch's range is fsynced in the inflight
        file before its inserts, so a replay after a crash re-forms the same first batch and its
        inserts carry the same tokens."""
        if len(records) == 1:
            return self._token(records[0], table)
        first, last = records[0].end, records[-1].end
        return f"steplens:{self._spool_id}:{first.segment}:{first.offset}-{last.segment}:{last.offset}:{table}"

    def _insert_records(
        self, kind: RecordKind, records: list[tuple[LoadItem, pa.Table]], batch: list[LoadItem],
        together: Callable[[Transport, list[pa.Table], str], Any],
        alone: Callable[[Transport, pa.Table, str], Any], table: str,
    ) -> list[Any] | None:
        """Insert the rows of `records` (all of one kind) in one insert (`together`); when that
        fails for a reason of its data, record by record (`alone`, each under its own token), so
        only the failing record goes to the dead letters. Returns the results (one for the batch,
        or one per record that went in), None when closing while ClickHouse keeps failing."""
        if not records:
            return []
        what = f"ClickHouse {table} insert"
        try:
            token = self._batch_token(batch, table)
            tables = [rows for _, rows in records]
            return [self._retrying(what, lambda: together(self.connect(), tables, token))]
        except Exception as exc:  # noqa: BLE001
            if environmental(exc):
                return None
            log.warning("inserting %d %s record(s) together failed (%s); inserting them one by one",
                        len(records), kind.name.lower(), exc)
        results = []
        for item, rows in records:
            try:
                results.append(self._retrying(what, lambda r=rows, i=item: alone(self.connect(), r,
                                                                                  self._token(i, table))))
            except Exception as exc:  # noqa: BLE001
                if environmental(exc):
                    return None
                self._dead_letter(item, exc)
        return results

    def _load(self, batch: list[LoadItem]) -> bool:
        """Load `batch`, derive its traces' runs, move the mark. False: closing before it could.

        One insert per table for the whole batch (not per record): see load.load_span_batch."""
        started = time.monotonic()
        by_kind: dict[RecordKind, list[tuple[LoadItem, pa.Table]]] = {k: [] for k in RecordKind}
        for item in batch:
            try:
                rows = self._retrying("normalizing a record", lambda i=item: self._rows(i))
            except Exception as exc:  # noqa: BLE001 - a record that does not normalize is poison
                if environmental(exc):
                    return False  # closing while it keeps failing (out of memory): the spool keeps it
                self._dead_letter(item, exc)
                continue
            by_kind[item.kind].append((item, rows))
        if len(batch) > 1:
            try:
                self._retrying("writing the inflight batch", lambda: write_inflight(self._spool_dir, batch[-1].end))
            except OSError:
                return False
        db = self._db
        span_batches = self._insert_records(
            RecordKind.TRACES, by_kind[RecordKind.TRACES], batch,
            lambda t, tables, token: load.load_span_batch(t, db, tables, token),
            lambda t, rows, token: load.load_spans(t, db, rows, token), "spans",
        )
        new_logs = self._insert_records(
            RecordKind.LOGS, by_kind[RecordKind.LOGS], batch,
            lambda t, tables, token: load.load_logs(t, db, logs_load.concat(tables) or tables[0], token),
            lambda t, rows, token: load.load_logs(t, db, rows, token), "log_records",
        )
        scored = self._insert_records(
            RecordKind.SCORES, by_kind[RecordKind.SCORES], batch,
            lambda t, tables, token: load.insert_scores(t, db, tables, token),
            lambda t, rows, token: load.insert_scores(t, db, [rows], token), "scores",
        )
        if span_batches is None or new_logs is None or scored is None:
            return False  # closing: stays in the spool
        touched: set[load.Trace] = set()
        local: load.SpanBatch | None = None
        inserted = 0
        for result in span_batches:
            if isinstance(result, load.SpanBatch):
                local = result
                inserted += result.inserted
                touched.update(result.traces)
            else:  # (inserted, traces) of a record loaded alone: its traces are read back whole
                inserted += result[0]
                touched.update(result[1])
        received = sum(rows.num_rows for _, rows in by_kind[RecordKind.TRACES])
        received_logs = sum(rows.num_rows for _, rows in by_kind[RecordKind.LOGS])
        received_scores = sum(rows.num_rows for _, rows in by_kind[RecordKind.SCORES])
        logs = sum(t.num_rows for t in new_logs)
        scores = sum(scored)
        logs_table = logs_load.concat(new_logs)
        if touched or logs_table is not None:
            try:
                self._retrying("run derivation", lambda: self._derive(touched, logs_table, local))
            except Exception as exc:  # noqa: BLE001
                if environmental(exc):
                    return False
                if not self._derive_one_by_one(touched, logs_table, exc):
                    return False
        try:
            self._retrying("writing the spool mark", lambda: write_position(self._spool_dir, batch[-1].end))
        except OSError:
            return False
        segment = batch[-1].end.segment
        if segment > self._deleted_before:
            delete_segments_before(self._spool_dir, segment)
            self._deleted_before = segment
        result = LoadResult(received=received, inserted=inserted, logs_received=received_logs, logs_inserted=logs,
                            scores_received=received_scores, scores_written=scores)
        self._hooks.loaded(batch, result, time.monotonic() - started)
        with self._cond:
            self._loaded_upto = max(self._loaded_upto, batch[-1].seq)
            self._cond.notify_all()
        return True

    def _derive_one_by_one(self, traces: set[load.Trace], logs: pa.Table | None, exc: BaseException) -> bool:
        """A derivation that failed for a reason of its data: derive each trace alone, so one poison
        trace does not keep the others' runs stale; the failing ones are set aside (counted, logged)
        until they get new spans. False: closing while ClickHouse is unreachable."""
        log.warning("deriving %d trace(s) together failed (%s); deriving them one by one", len(traces), exc)
        groups: list[tuple[set[load.Trace], pa.Table | None]] = [({t}, None) for t in sorted(traces)]
        if logs is not None:
            groups.append((set(), logs))
        for group, group_logs in groups:
            try:
                self._retrying("run derivation", lambda g=group, lg=group_logs: self._derive(g, lg))
            except Exception as one:  # noqa: BLE001
                if environmental(one):
                    return False
                self.upkeep_quarantined += len(group)
                self._hooks.quarantined(self.upkeep_quarantined)
                log.error("trace %s set aside: its runs cannot be derived (%s: %s)",
                          next(iter(group), ("logs", "")), type(one).__name__, one)
        return True

    def _derive(self, traces: set[load.Trace], logs: pa.Table | None, local: load.SpanBatch | None = None) -> None:
        """New run versions of `traces`, and the scores of their evaluation events and of `logs`.
        `local`: the batch insert that touched them, whose rows stand in for reading fresh traces back."""
        started = time.monotonic()
        transport = self.connect()
        # the revision is taken before the spans are read: of two nodes deriving one trace, the one
        # that read later (so saw at least the spans the other saw) wins
        revision = time.time_ns()
        spans, new = load.derivation_spans(transport, self._db, sorted(traces), local) if traces else (None, set())
        runs, scores = self._deriver.derive(spans, logs, utcnow())
        load.store_runs(transport, self._db, runs, revision)
        load.store_scores(transport, self._db, scores)
        if traces:
            analytics = self._deriver.analytics()
            for table in ANALYTICS_TABLES:
                load.replace_trace_rows(transport, self._db, table, analytics[table.name], sorted(traces), revision,
                                        new)
        self.upkeep_passes += 1
        self.last_upkeep_s = time.monotonic() - started
        self._hooks.upkept(len(traces), self.last_upkeep_s)

    def _retrying(self, what: str, fn: Callable[[], Any]) -> Any:
        """`fn()`, retried with backoff while it fails for an environmental reason (a few attempts
        once closing); `unwritable` says why meanwhile, so submits answer 503."""

        def stop(state: RetryCallState) -> bool:
            return self._closing and state.attempt_number >= 3

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            assert exc is not None
            if self.unwritable is not None and state.attempt_number % 10 == 0:
                log.error("%s failed (attempt %d), retrying with backoff: %s", what, state.attempt_number, exc)
            self._set_unwritable(exc)

        for attempt in Retrying(
            retry=retry_if_exception(environmental),
            wait=wait_exponential(multiplier=RETRY_MIN_S, max=RETRY_MAX_S),
            stop=stop,
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                result = fn()
                if self.unwritable is not None:
                    log.warning("ClickHouse can be written again; loading resumed")
                    with self._cond:
                        self.unwritable = None
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _set_unwritable(self, exc: BaseException) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        if self.unwritable is None:
            log.error("ClickHouse cannot be written; exports get 503 until it can: %s", reason)
        with self._cond:
            self.unwritable = reason
            self._cond.notify_all()

    def _dead_letter(self, item: LoadItem, exc: BaseException) -> None:
        log.error("spool record %s/%d (project %r) cannot be loaded and goes to the dead-letter directory: %s: %s",
                  item.end.segment, item.end.offset, item.project, type(exc).__name__, exc)
        deadletter.write(self._spool_dir, item.end, item.project, item.raw(), item.nspans, exc, item.kind)
        self._hooks.dead_lettered(item, exc)

    def _retention(self, transport: Transport) -> int:
        """The sweep behind `sweep_retention`: delete what is older than `retention_days` now (the
        TTL does the same on merges, whenever they run); returns the spans deleted."""
        cutoff = utcnow() - timedelta(days=self._retention_days)
        db = f"`{self._db}`"
        old = transport.query_arrow(f"SELECT count() FROM {db}.spans WHERE start_time < {{c:DateTime64(6, 'UTC')}}",
                                    {"c": cutoff})
        spans = int(old.column(0)[0].as_py())
        for table, column in (("spans", "start_time"), ("runs", "coalesce(start_time, span_start, updated_at)"),
                              ("log_records", "time"), ("scores", "created_at"),
                              *((t.name, "start_time") for t in ANALYTICS_TABLES),
                              *((t.name, t.ttl_column) for t in WORK_TABLES if t.ttl_column),
                              ("search_docs", "start_time")):
            transport.command(f"DELETE FROM {db}.`{table}` WHERE {column} < {{c:DateTime64(6, 'UTC')}}", {"c": cutoff})
        self._hooks.retention(spans, 0)
        return spans

