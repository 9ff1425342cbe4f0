"""SpanStore: the durable span store the receiver writes to and the query API reads from.

Flow: `submit` normalizes the request to its Arrow rows and frames it into a spool record (in a worker
thread, off the event loop) and queues it -> the committer thread appends
a whole group and fsyncs once -> futures resolve (the 200) -> the writer thread, sole owner of the
DuckDB write connection, loads the records in large transactions together with the spool mark.
Memory is bounded by `queue_max_bytes` of accepted-but-not-loaded records; beyond it `submit`
raises Overloaded instead of queueing or dropping. A request larger than one piece (10,000 spans
or 8 MiB, ingest/store/split.py) goes in pieces, each waiting for room while the loader drains the
ones before it, and a piece bigger than the whole limit still goes in when nothing else waits: no
valid body gets 503 forever. OTLP log records (`submit_logs`) take the same path as spool records
of kind LOGS (ingest/store/logs_load.py), scores (`submit_score_payload`, called by
ingest/scores/submit.py) as records of kind SCORES (ingest/store/scores_load.py).

A full disk (or an I/O error) is a 503, never a 500 and never a lost ack: a spool write that fails
answers StorageUnavailable (retry), and for `retry_after_s` after it, or while the writer reports the
database unwritable, `submit` refuses at once and `ready()` is false. The first write that succeeds
(a client's retry, or the readiness probe's test write) makes the store ready again; the writer
reopens an invalidated database by itself (`_reopen_database`), so no restart is needed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import TypeVar

import duckdb
import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.config import Settings
from ingest.errors import Overloaded, StorageUnavailable
from ingest.metrics import IngestMetrics
from ingest.normalize.process import NormalizePool
from ingest.normalize.values import out_of_range_counts
from ingest.search.index import SearchIndex
from ingest.search.indexer import SearchIndexer
from ingest.store import database
from ingest.store.backend import DUCKDB_QUERIES
from ingest.store.committer import CommitterClosed, GroupCommitter, PendingWrite
from ingest.store.database import open_database
from ingest.store.loading import LoadResult, ensure_position_row, read_position
from ingest.store.migrate import migrate
from ingest.store.reader import timed_cursor
from ingest.store.retention import DEFAULT_CHUNK_ROWS
from ingest.store.split import needs_split, pieces
from ingest.store.spool import (
    DEFAULT_SEGMENT_MAX_BYTES,
    Position,
    RecordKind,
    SpoolWriter,
    encode_record,
    list_segments,
)
from ingest.store.stats import StoreStats
from ingest.store.writer import (
    CheckpointPolicy,
    LoadItem,
    Normalizer,
    Writer,
    WriterHooks,
    count_spans,
    utcnow,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

# A piece of a large request waits this long at most for the queue to have room, then 503.
ROOM_WAIT_S = 60.0
ROOM_POLL_S = 0.02


def default_normalizer(settings: Settings) -> Normalizer:
    """The real normalizer with the price table loaded once (bundled, or overridden by price_file)."""
    from ingest.normalize import spans_table
    from tracer.pricing import PriceTable

    prices = PriceTable.load(settings.price_file)

    def normalize(project: str, request: ExportTraceServiceRequest, ingested_at: datetime) -> pa.Table:
        return spans_table(project, request, ingested_at, prices=prices)

    return normalize


class SpanStore:
    """See module docstring. Thread-safe; `submit` is loop-safe, `submit_blocking` is for threads."""

    name = "duckdb"  # the storage seam (ingest/store/backend.py)
    queries = DUCKDB_QUERIES

    def __init__(
        self,
        settings: Settings,
        metrics: IngestMetrics | None = None,
        *,
        normalizer: Normalizer | None = None,
        segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES,
        retention_chunk_rows: int = DEFAULT_CHUNK_ROWS,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or IngestMetrics()
        self._normalizer = normalizer
        self._segment_max_bytes = segment_max_bytes
        self._retention_chunk_rows = retention_chunk_rows
        self._lock = threading.Lock()
        self._accepting = False
        self._started = False
        self._seq = 0
        self._queue_bytes = 0
        self._counts: dict[str, int] = dict.fromkeys(
            (
                "requests_acked", "fsyncs", "spans_stored", "spans_deduplicated", "records_dead_lettered",
                "spans_dead_lettered", "records_loaded", "spans_expired", "runs_expired", "replayed_records",
                "logs_stored", "logs_deduplicated",
            ),
            0,
        )
        self._last_commit_s = 0.0
        self._last_load_s = 0.0
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._read_parent: duckdb.DuckDBPyConnection | None = None
        self._read_lock = threading.Lock()
        self._writer: Writer | None = None
        self._normalize: Normalizer | None = None
        self._committer: GroupCommitter | None = None
        self._pool: NormalizePool | None = None
        self._spool_error: str | None = None  # the last spool write's failure, until a write succeeds
        self._spool_retry_at = 0.0  # before this, submits are refused without trying the disk
        # the full-text index (ingest/search), kept by the writer thread; read by /api/search
        self.search_index = SearchIndex(settings.search_index_path)
        self.search_indexer = SearchIndexer(self.search_index, settings.retention_days)

    # ---- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Open DuckDB, migrate, replay the spool (blocking until replayed), start the threads."""
        if self._started:
            return
        s = self.settings
        s.db.parent.mkdir(parents=True, exist_ok=True)
        spool = s.spool_path
        spool.mkdir(parents=True, exist_ok=True)
        normalize = self._normalizer or default_normalizer(s)
        self._normalize = normalize
        if self._normalizer is None and s.normalize_processes > 0:
            self._pool = NormalizePool(s.normalize_processes, s.price_file)
        conn = open_database(s.db, s)
        try:
            migrate(conn)
            ensure_position_row(conn, utcnow())
            start = read_position(conn)
            writer = Writer(
                conn, normalize, spool,
                WriterHooks(
                    loaded=self._on_loaded,
                    dead_lettered=self._on_dead_letter,
                    retention=self._on_retention,
                    upkept=self._on_upkeep,
                    checkpointed=self.metrics.checkpoint_seconds.observe,
                    upkeep_isolated=lambda reason: self.metrics.upkeep_traces_isolated.labels(reason=reason).inc(),
                    quarantined=self.metrics.upkeep_traces_set_aside.set,
                ),
                load_batch_spans=s.load_batch_spans,
                retention_days=s.retention_days,
                retention_interval_s=s.retention_interval_s,
                retention_chunk_rows=self._retention_chunk_rows,
                wal_path=s.db.with_name(s.db.name + ".wal"),
                checkpoints=CheckpointPolicy(
                    s.checkpoint_idle_wal_bytes, s.checkpoint_max_wal_bytes, rows=s.duckdb_row_group_size
                ),
                upkeep_interval_s=s.upkeep_interval_s,
                upkeep_max_traces=s.upkeep_max_traces,
                reopen=self._reopen_database,
                indexer=self.search_indexer,
            )
            replayed = writer.replay(start, first_seq=0)
            position = read_position(conn)
        except BaseException:
            conn.close()
            if self._pool is not None:
                self._pool.close()
                self._pool = None
            raise
        if replayed:
            log.info("replayed %d acknowledged spool record(s) into DuckDB", replayed)
        self._counts["replayed_records"] = replayed
        self._seq = replayed
        next_segment = max([position.segment, *list_segments(spool)]) + 1
        committer = GroupCommitter(
            SpoolWriter(spool, next_segment, self._segment_max_bytes),
            s.commit_interval_ms / 1000.0,
            on_durable=self._on_durable,
            on_failed=self._on_failed,
            on_commit=self._on_commit,
        )
        self._conn, self._writer, self._committer = conn, writer, committer
        self._read_parent = database.cursor(conn)
        writer.start()
        committer.start()
        with self._lock:
            self._accepting = True
        self._started = True

    def stop(self) -> None:
        """Stop accepting, fsync what is queued, load everything acknowledged, checkpoint, close."""
        if not self._started:
            return
        with self._lock:
            self._accepting = False
        assert self._committer is not None and self._writer is not None and self._conn is not None
        self._committer.close()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._writer.close()
        if self._writer.failed is None:
            try:
                self._conn.execute("CHECKPOINT")
            except duckdb.Error as exc:
                log.error("checkpoint at shutdown failed (the WAL will be replayed on open): %s", exc)
        if self._read_parent is not None:
            self._read_parent.close()
        self._conn.close()
        self.search_index.close()
        self._started = False

    def _reopen_database(self, old: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """Writer hook: close the invalidated database (readers included: a live cursor would keep the
        invalidated instance alive) and open the file again; DuckDB replays its WAL."""
        with self._read_lock:
            parent, self._read_parent = self._read_parent, None
        for conn in (parent, old):
            if conn is None:
                continue
            try:
                conn.close()
            except duckdb.Error as exc:
                log.warning("closing the invalidated database connection failed: %s", exc)
        conn = open_database(self.settings.db, self.settings)
        self._conn = conn  # what stop() checkpoints and closes
        with self._read_lock:
            self._read_parent = database.cursor(conn)
        return conn

    def ready(self) -> bool:
        return self.not_ready_reason() is None

    def not_ready_reason(self) -> str | None:
        """None when the store accepts and can write; otherwise why not (the /readyz answer)."""
        with self._lock:
            accepting = self._accepting
        if not accepting or self._writer is None:
            return "store is starting or stopped"
        # short and path-free: /readyz may be open to the network; the log has the full error
        if self._writer.failed is not None:
            return "loading stopped after a fatal database error (see the server log)"
        if self._writer.unwritable is not None:
            return "the database cannot be written (disk full or I/O error; see the server log)"
        if self._spool_error is not None and not self._probe_spool():
            return "the spool cannot be written (disk full or I/O error; see the server log)"
        return None

    def _probe_spool(self) -> bool:
        """After a spool write failure: a small durable test write in the spool directory, at most once
        per `retry_after_s`, so readiness comes back when space does even if no client writes."""
        with self._lock:
            if self._spool_error is None:
                return True
            if time.monotonic() < self._spool_retry_at:
                return False
            self._spool_retry_at = time.monotonic() + self.settings.retry_after_s
        probe = self.settings.spool_path / ".write-probe"
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"\0" * 65536)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            log.debug("spool write probe failed: %s", exc)
            return False
        finally:
            with suppress(OSError):
                probe.unlink()
        self._spool_writable()
        return True

    def _spool_writable(self) -> None:
        with self._lock:
            was, self._spool_error = self._spool_error, None
        if was is not None:
            self.metrics.storage_unwritable.labels(part="spool").set(0)
            log.warning("the spool can be written again (it failed with: %s)", was)

    def _refuse_if_unwritable(self) -> None:
        writer = self._writer
        if writer is not None and writer.unwritable is not None:
            self.metrics.storage_unwritable.labels(part="database").set(1)
            raise StorageUnavailable(
                f"the database cannot be written ({writer.unwritable}); nothing was stored, retry later",
                self.settings.retry_after_s,
            )
        self.metrics.storage_unwritable.labels(part="database").set(0)
        with self._lock:
            error = self._spool_error if time.monotonic() < self._spool_retry_at else None
        if error is not None:
            raise StorageUnavailable(
                f"the spool cannot be written ({error}); nothing was stored, retry later", self.settings.retry_after_s
            )

    # ---- writes -----------------------------------------------------------------------------

    def _prepare(self, project: str, request: ExportTraceServiceRequest, payload: bytes | None = None) -> LoadItem:
        """The CPU-heavy part of a write (serialize, normalize), done by the caller's thread before the
        ack: many requests normalize in parallel with the writer's DuckDB work instead of after it.
        With worker processes (`normalize_processes`) the normalization runs there, on another core,
        and this thread only waits for the table.

        A normalizer failure is not the client's error: the item goes on without a table and the
        writer retries and dead-letters it, exactly as for a replayed record.
        """
        if payload is None:
            payload = request.SerializeToString()
        table = None
        if self._pool is not None:
            table = self._pool.normalize(project, payload, utcnow())  # None: normalize here instead
        if table is None and self._normalize is not None:
            try:
                table = self._normalize(project, request, utcnow())
            except Exception:  # noqa: BLE001 - the writer normalizes again and dead-letters with the error
                table = None
        if table is not None:
            for kind, n in out_of_range_counts(table).items():
                self.metrics.values_out_of_range.labels(kind=kind).inc(n)
        request_or_none = None if table is not None else request  # the table replaces the (larger) message
        return LoadItem(0, project, request_or_none, payload, 0, count_spans(request), Position(0, 0), table)

    def _check_room(self) -> None:
        """Refuse early (before spending CPU on normalizing) when the store is full or not accepting;
        `_enqueue` makes the exact check."""
        self._refuse_if_unwritable()
        with self._lock:
            full = not self._accepting or self._queue_bytes >= self.settings.queue_max_bytes
            queued = self._queue_bytes
        if full:
            raise Overloaded(
                f"ingest queue full or store not accepting ({queued} of {self.settings.queue_max_bytes} bytes "
                "waiting to be loaded)",
                self.settings.retry_after_s,
            )

    def _enqueue(self, item: LoadItem, lone_ok: bool = False) -> PendingWrite:
        record = encode_record(item.project, item.payload or b"", item.kind)
        # The normalized table waits in memory with the record until it is loaded: count both, so
        # queue_max_bytes bounds what a backlog really holds.
        nbytes = len(record) + (item.table.nbytes if item.table is not None else 0)
        item.nbytes = nbytes
        retry_after = self.settings.retry_after_s
        with self._lock:
            if not self._accepting or self._committer is None:
                raise Overloaded("the span store is not accepting writes (starting or stopping)", retry_after)
            # a piece bigger than the whole limit still goes in when nothing else waits (`lone_ok`):
            # refusing it would answer a valid body 503 forever
            over = self._queue_bytes + nbytes > self.settings.queue_max_bytes
            if over and not (lone_ok and self._queue_bytes == 0):
                raise Overloaded(
                    f"ingest queue full ({self._queue_bytes} of {self.settings.queue_max_bytes} bytes waiting "
                    "to be loaded)",
                    retry_after,
                )
            self._seq += 1
            item.seq = self._seq
            write = PendingWrite(record, payload=item)
            write.future.set_running_or_notify_cancel()  # a cancelled caller must not orphan a durable write
            try:
                self._committer.enqueue(write)
            except CommitterClosed as exc:
                raise Overloaded("the span store is shutting down", retry_after) from exc
            self._queue_bytes += nbytes
        self.metrics.queue_bytes.inc(nbytes)
        return write

    async def submit(self, project: str, request: ExportTraceServiceRequest, payload: bytes | None = None) -> None:
        """Return once the request is durable (fsynced to the spool). Raises Overloaded when full.

        `payload`: the request's protobuf bytes when the caller has them (saves serializing it again).
        """
        self._check_room()
        writes: list[PendingWrite] = []
        if not needs_split(request, payload):
            item = await asyncio.to_thread(self._prepare, project, request, payload)  # CPU off the event loop
            writes.append(self._enqueue(item))
        else:
            parts = pieces(request)
            while (piece := await asyncio.to_thread(next, parts, None)) is not None:
                deadline = time.monotonic() + ROOM_WAIT_S
                while not self._has_room():  # the loader drains the pieces before this one
                    self._wait_check(deadline)
                    await asyncio.sleep(ROOM_POLL_S)
                item = await asyncio.to_thread(self._prepare, project, piece, None)
                while (write := self._try_enqueue_piece(item)) is None:
                    self._wait_check(deadline)
                    await asyncio.sleep(ROOM_POLL_S)
                writes.append(write)
        try:
            for write in writes:
                await asyncio.wrap_future(write.future)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def submit_blocking(self, project: str, request: ExportTraceServiceRequest, timeout: float | None = None) -> None:
        """`submit` for threads (the gRPC pool): blocks until durable."""
        self._check_room()
        writes: list[PendingWrite] = []
        if not needs_split(request):
            writes.append(self._enqueue(self._prepare(project, request)))
        for piece in pieces(request) if not writes else ():
            deadline = time.monotonic() + ROOM_WAIT_S
            while not self._has_room():
                self._wait_check(deadline)
                time.sleep(ROOM_POLL_S)
            item = self._prepare(project, piece)
            while (write := self._try_enqueue_piece(item)) is None:
                self._wait_check(deadline)
                time.sleep(ROOM_POLL_S)
            writes.append(write)
        try:
            for write in writes:
                write.future.result(timeout)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def _wait_check(self, deadline: float) -> None:
        """While a piece waits for room: a disk that cannot be written or a loader that does not drain
        ends the wait with a 503 (the client retries the whole request; dedup keeps it exact)."""
        self._refuse_if_unwritable()
        with self._lock:
            accepting = self._accepting
        if not accepting:
            raise Overloaded("the span store is not accepting writes (stopping)", self.settings.retry_after_s)
        if time.monotonic() > deadline:
            raise self._full()

    def _try_enqueue_piece(self, item: LoadItem) -> PendingWrite | None:
        """Enqueue one piece of a large request, or None when the queue has no room for it yet. A piece
        bigger than the whole queue goes in once the queue is empty, so the request always progresses."""
        try:
            return self._enqueue(item, lone_ok=True)
        except Overloaded:
            with self._lock:
                if not self._accepting:
                    raise
            return None

    def _has_room(self) -> bool:
        with self._lock:
            return self._queue_bytes < self.settings.queue_max_bytes

    def _full(self) -> Overloaded:
        return Overloaded(
            f"ingest queue full for {ROOM_WAIT_S:.0f} s while storing a large request in pieces (the loader is "
            "behind); nothing of it is lost if retried",
            self.settings.retry_after_s,
        )

    def _unavailable(self, exc: OSError) -> StorageUnavailable:
        return StorageUnavailable(
            f"the spool cannot be written ({exc.strerror or exc}); nothing was stored, retry later",
            self.settings.retry_after_s,
        )

    def _prepare_logs(self, project: str, request: ExportLogsServiceRequest, payload: bytes | None) -> LoadItem:
        """`_prepare` for an OTLP logs request: its log_records rows are built before the ack; a
        failure leaves them to the writer, which normalizes the payload again or dead-letters it."""
        from ingest.normalize.logs import count_log_records, logs_table

        if payload is None:
            payload = request.SerializeToString()
        try:
            table: pa.Table | None = logs_table(project, request, utcnow())
        except Exception:  # noqa: BLE001 - the writer normalizes again and dead-letters with the error
            table = None
        n = count_log_records(request)
        return LoadItem(0, project, None, payload, 0, n, Position(0, 0), table, kind=RecordKind.LOGS)

    async def submit_logs(
        self, project: str, request: ExportLogsServiceRequest, payload: bytes | None = None
    ) -> None:
        """`submit` for log records: returns once they are durable; same queue bound, same Overloaded."""
        self._check_room()
        item = await asyncio.to_thread(self._prepare_logs, project, request, payload)
        try:
            await asyncio.wrap_future(self._enqueue(item).future)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def submit_logs_blocking(
        self, project: str, request: ExportLogsServiceRequest, timeout: float | None = None
    ) -> None:
        self._check_room()
        try:
            self._enqueue(self._prepare_logs(project, request, None)).future.result(timeout)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def _prepare_scores(self, project: str, payload: bytes) -> LoadItem:
        """`_prepare` for a scores payload (ingest/store/scores_load.py): rows built before the ack."""
        from ingest.store import scores_load

        try:
            table: pa.Table | None = scores_load.normalize(project, payload, utcnow())
        except Exception:  # noqa: BLE001 - the writer normalizes again and dead-letters with the error
            table = None
        n = table.num_rows if table is not None else scores_load.count(payload)
        return LoadItem(0, project, None, payload, 0, n, Position(0, 0), table, kind=RecordKind.SCORES)

    async def submit_score_payload(self, project: str, payload: bytes) -> None:
        """Spool one scores payload (ingest/store/scores_load.py `encode`); returns once it is durable.
        Same queue bound and answers as spans. Callers use ingest/scores/submit.py, not this."""
        self._check_room()
        item = await asyncio.to_thread(self._prepare_scores, project, payload)
        try:
            await asyncio.wrap_future(self._enqueue(item).future)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def submit_score_payload_blocking(self, project: str, payload: bytes, timeout: float | None = None) -> None:
        """`submit_score_payload` for threads (queues, evaluators, replay)."""
        self._check_room()
        try:
            self._enqueue(self._prepare_scores(project, payload)).future.result(timeout)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def wait_loaded(self, timeout: float) -> bool:
        """True once everything acknowledged before the call is queryable, analytics tables included."""
        return self._writer is not None and self._writer.wait_loaded(timeout)

    def run_write(self, fn: Callable[[duckdb.DuckDBPyConnection], T]) -> Future[T]:
        """Run `fn(write_connection)` on the single writer thread (e.g. alert state updates)."""
        if self._writer is None:
            raise RuntimeError("the span store is not started")
        return self._writer.call(fn)

    def sweep_retention(self, timeout: float = 60.0) -> int:
        """Run a retention sweep now (in bounded chunks on the writer); returns spans deleted."""
        if self._writer is None:
            raise RuntimeError("the span store is not started")
        return self._writer.request_retention().result(timeout)

    # ---- reads ------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on the database whose queries are interrupted after `query_timeout_s`.

        The limit covers the whole `with` block; running over raises `QueryTimeout`.
        """
        with self._read_lock:
            if self._read_parent is None:
                if self._started:
                    raise StorageUnavailable("the database is being reopened; retry", self.settings.retry_after_s)
                raise RuntimeError("the span store is not started")
            cursor = database.cursor(self._read_parent)
        with timed_cursor(cursor, self.settings.query_timeout_s) as cur:
            yield cur

    def stats(self) -> StoreStats:
        with self._lock:
            counts = dict(self._counts)
            queue_bytes = self._queue_bytes
            submitted = self._seq
        writer = self._writer
        return StoreStats(
            queue_bytes=queue_bytes,
            queue_max_bytes=self.settings.queue_max_bytes,
            requests_submitted=submitted,
            pending_records=writer.pending_items() if writer else 0,
            last_commit_latency_s=self._last_commit_s,
            last_load_latency_s=self._last_load_s,
            checkpoints=writer.checkpoints if writer else 0,
            upkeep_passes=writer.upkeep_passes if writer else 0,
            last_upkeep_latency_s=writer.last_upkeep_s if writer else 0.0,
            upkeep_traces_set_aside=writer.upkeep_quarantined if writer else 0,
            writer_error=None if writer is None or writer.failed is None else repr(writer.failed),
            unwritable=(writer.unwritable if writer is not None else None) or self._spool_error,
            **counts,
        )

    # ---- hooks from the committer and writer threads ------------------------------------------

    def _on_commit(self, latency: float, requests: int) -> None:
        self.metrics.spool_fsyncs.inc()
        self.metrics.spool_requests.inc(requests)
        self.metrics.commit_seconds.observe(latency)
        with self._lock:
            self._counts["fsyncs"] += 1
            self._counts["requests_acked"] += requests
            self._last_commit_s = latency
        self._spool_writable()

    def _on_durable(self, pairs: list[tuple[PendingWrite, Position]]) -> None:
        items = []
        for write, end in pairs:
            item: LoadItem = write.payload
            item.end = end
            items.append(item)
        assert self._writer is not None
        self._writer.put(items)

    def _on_failed(self, group: list[PendingWrite], exc: BaseException) -> None:
        # the whole reservation (record and normalized table) goes: none of it reaches the writer
        self._release(sum(w.payload.nbytes for w in group))
        if isinstance(exc, OSError):
            with self._lock:
                self._spool_error = f"{type(exc).__name__}: {exc}"
                self._spool_retry_at = time.monotonic() + self.settings.retry_after_s
            self.metrics.storage_unwritable.labels(part="spool").set(1)

    def _release(self, nbytes: int) -> None:
        if nbytes:
            with self._lock:
                self._queue_bytes -= nbytes
            self.metrics.queue_bytes.dec(nbytes)

    def _on_loaded(self, items: list[LoadItem], result: LoadResult, latency: float) -> None:
        self._release(sum(i.nbytes for i in items))
        self.metrics.spans_stored.inc(result.inserted)
        self.metrics.spans_deduplicated.inc(result.duplicates)
        self.metrics.logs_stored.inc(result.logs_inserted)
        self.metrics.logs_deduplicated.inc(result.logs_received - result.logs_inserted)
        self.metrics.scores_written.inc(result.scores_written)
        self.metrics.load_seconds.observe(latency)
        with self._lock:
            self._counts["spans_stored"] += result.inserted
            self._counts["spans_deduplicated"] += result.duplicates
            self._counts["records_loaded"] += len(items)
            self._counts["logs_stored"] += result.logs_inserted
            self._counts["logs_deduplicated"] += result.logs_received - result.logs_inserted
            self._last_load_s = latency

    def _on_dead_letter(self, item: LoadItem, exc: BaseException) -> None:
        rejected = {RecordKind.LOGS: self.metrics.logs_rejected, RecordKind.SCORES: self.metrics.scores_rejected}.get(
            item.kind, self.metrics.spans_rejected
        )
        rejected.labels(reason="load_failed").inc(item.nspans)
        self.metrics.records_dead_lettered.labels(reason=type(exc).__name__).inc()
        with self._lock:
            self._counts["records_dead_lettered"] += 1
            if item.kind is RecordKind.TRACES:
                self._counts["spans_dead_lettered"] += item.nspans

    def _on_upkeep(self, traces: int, seconds: float) -> None:
        self.metrics.upkeep_traces.inc(traces)
        self.metrics.upkeep_seconds.observe(seconds)

    def _on_retention(self, spans: int, runs: int) -> None:
        self.metrics.spans_expired.inc(spans)
        with self._lock:
            self._counts["spans_expired"] += spans
            self._counts["runs_expired"] += runs

