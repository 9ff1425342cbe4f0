"""ClickHouseStore: the span store on ClickHouse, with the DuckDB store's receive path.

What is shared (SpanStore): submit -> normalize -> fsynced spool -> the 200, the queue bound,
the 503s of a full spool. What is this backend's: the writer (ingest/store/clickhouse/writer.py:
exactly-once inserts, runs derivation, the spool mark in the spool directory), the schema
(created and migrated at start), and reads: `read()` yields a ClickHouseCursor whose statements
get `max_execution_time` from `query_timeout_s`, and `queries` is ClickHouse's query namespace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from ingest.errors import NotAvailable, StorageUnavailable
from ingest.normalize.process import NormalizePool
from ingest.store.backend import CLICKHOUSE_QUERIES
from ingest.store.clickhouse.cursor import ClickHouseCursor
from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.search_index import ClickHouseSearchIndex, ClickHouseSearchRebuild
from ingest.store.clickhouse.transport import Transport, open_transport
from ingest.store.clickhouse.writer import ClickHouseWriter, read_position
from ingest.store.committer import GroupCommitter
from ingest.store.failures import environmental
from ingest.store.spool import SpoolWriter, list_segments
from ingest.store.store import SpanStore, default_normalizer
from ingest.store.writer import WriterHooks

log = logging.getLogger(__name__)
T = TypeVar("T")


class ClickHouseStore(SpanStore):
    """See module docstring."""

    name = "clickhouse"
    queries = CLICKHOUSE_QUERIES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # full-text search lives in ClickHouse too (search_docs), so every api node answers the same
        self.search_index = ClickHouseSearchIndex(self.read)  # type: ignore[assignment]
        self.search_indexer = ClickHouseSearchRebuild(  # type: ignore[assignment]
            lambda: self._writer.transport if self._writer is not None else None,  # type: ignore[attr-defined]
            self.settings.clickhouse_database,
            self.settings.clickhouse_cluster,
        )

    def _connect(self) -> Transport:
        """A connection to ClickHouse with the schema migrated (the writer calls it until it works)."""
        s = self.settings
        transport = open_transport(s.clickhouse_url, s.clickhouse_user, s.clickhouse_password, s.clickhouse_database)
        try:
            migrate(transport, s.clickhouse_database, s.clickhouse_cluster, s.retention_days)
        except BaseException:
            transport.close()
            raise
        return transport

    def start(self) -> None:
        """Connect, migrate, replay the spool into ClickHouse, start the committer and writer."""
        if self._started:
            return
        s = self.settings
        spool = s.spool_path
        spool.mkdir(parents=True, exist_ok=True)
        normalize = self._normalizer or default_normalizer(s)
        self._normalize = normalize
        if self._normalizer is None and s.normalize_processes > 0:
            self._pool = NormalizePool(s.normalize_processes, s.price_file)
        writer = ClickHouseWriter(
            self._connect, s.clickhouse_database, normalize, spool,
            WriterHooks(
                loaded=self._on_loaded,
                dead_lettered=self._on_dead_letter,
                retention=self._on_retention,
                upkept=self._on_upkeep,
                checkpointed=lambda _s: None,
                upkeep_isolated=lambda _r: None,
                quarantined=lambda _n: None,
            ),
            load_batch_spans=s.load_batch_spans,
            retention_days=s.retention_days,
            retention_interval_s=s.retention_interval_s,
        )
        start = read_position(spool)
        replayed = 0
        try:
            writer.connect()
            replayed = writer.replay(start, first_seq=0)
        except Exception as exc:
            if not environmental(exc):
                writer.close()
                if self._pool is not None:
                    self._pool.close()
                    self._pool = None
                raise
            # ClickHouse unreachable: serve anyway (503s, not ready) while the writer keeps trying
            log.error("ClickHouse cannot be reached at start; retrying in the background: %s", exc)
            writer.defer_replay(start, 0, exc)
        if replayed:
            log.info("replayed %d acknowledged spool record(s) into ClickHouse", replayed)
        self._counts["replayed_records"] = replayed
        self._seq = replayed
        position = read_position(spool)
        next_segment = max([position.segment, *list_segments(spool)]) + 1
        committer = GroupCommitter(
            SpoolWriter(spool, next_segment, self._segment_max_bytes),
            s.commit_interval_ms / 1000.0,
            on_durable=self._on_durable,
            on_failed=self._on_failed,
            on_commit=self._on_commit,
        )
        self._writer, self._committer = writer, committer  # type: ignore[assignment]
        writer.start()
        committer.start()
        with self._lock:
            self._accepting = True
        self._started = True
        self.search_indexer.resume_if_needed()

    def stop(self) -> None:
        """Stop accepting, fsync what is queued, load everything acknowledged, close."""
        if not self._started:
            return
        with self._lock:
            self._accepting = False
        assert self._committer is not None and self._writer is not None
        self._committer.close()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self.search_indexer.close()
        self._writer.close()
        transport = self._writer.transport  # type: ignore[attr-defined]
        if transport is not None:
            transport.close()
        self.search_index.close()
        self._started = False

    @contextmanager
    def read(self) -> Iterator[ClickHouseCursor]:
        """A cursor whose statements stop after `query_timeout_s` (the whole `with` block's budget)."""
        if self._writer is None:
            raise RuntimeError("the span store is not started")
        transport = self._writer.transport  # type: ignore[attr-defined]
        if transport is None:
            raise StorageUnavailable("ClickHouse cannot be reached yet; retry shortly", self.settings.retry_after_s)
        cursor = ClickHouseCursor(transport, self.settings.query_timeout_s)
        try:
            yield cursor
        except Exception as exc:
            if environmental(exc) and not isinstance(exc, TimeoutError):
                raise StorageUnavailable(
                    f"ClickHouse cannot be read ({type(exc).__name__}); retry shortly", self.settings.retry_after_s
                ) from exc
            raise
        finally:
            cursor.close()

    def run_write(self, fn: Callable[[Any], T]) -> Future[T]:
        """Writes of the alert, queue and evaluator services are DuckDB SQL: not on this store yet."""
        raise NotAvailable(
            "not available on the clickhouse store yet: score configs, alerts, queues, views and evaluators are "
            "written on store=duckdb"
        )
