"""The ClickHouse store's search index: what the API and `search()` in filters call on
`store.search_index` and `store.search_indexer`, answered from ClickHouse (design.md §4).

Why objects with the FTS5 side's surface (`search`, `meta`; `failed`, `request_rebuild`): the API
and the filter resolver (ingest/search/hits.py) stay the same for both stores, and every api node
of a ClickHouse deployment answers the same, because the documents and the rebuild's progress live
in ClickHouse (`search_docs`, `search_meta`), not in a node.

The rebuild (`steplens search reindex`): empties `search_docs`, then writes the documents of the
stored spans again by start-time windows, oldest first (windows halved or doubled to hold about
REBUILD_ROWS spans), keeping its position in `search_meta` so every node reports the progress and a
node that starts while a rebuild has stalled (its node stopped) resumes it; a store with spans but no
documents and no built index (made before search was on ClickHouse) starts one at start. Spans loaded meanwhile
get their documents from the load path as always; one written twice (by a load and the rebuild) is
one document (ReplacingMergeTree key). A last pass re-writes the documents of the spans ingested
since shortly before the rebuild began, so a load that wrote its documents just before the table was
emptied and its spans just after loses nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

from ingest.clock import utcnow
from ingest.search.index import META_DOCUMENTS, Hit, from_us, to_us
from ingest.search.indexer import (
    META_BUILT_AT,
    META_REBUILD_END,
    META_REBUILD_NEXT,
    REBUILD_ROWS,
    REBUILD_WINDOW,
)
from ingest.store.clickhouse import search_load
from ingest.store.clickhouse.cursor import naive_utc
from ingest.store.clickhouse.queries import search as queries
from ingest.store.clickhouse.schema_search import SEARCH_DOCS, SEARCH_META
from ingest.store.clickhouse.transport import Transport
from ingest.store.failures import environmental

log = logging.getLogger(__name__)

META_REBUILD_STARTED = "rebuild_started_us"
STALLED_AFTER = timedelta(minutes=2)  # a rebuild whose position has not moved for this long is resumed
LATE_MARGIN = timedelta(minutes=10)  # the last pass covers spans ingested this long before the rebuild began


class ClickHouseSearchIndex:
    """`store.search_index` on ClickHouse: searches and bookkeeping read through the store's cursor."""

    def __init__(self, read: Callable[[], Any]) -> None:
        self._read = read  # the store's `read()`: a time-limited cursor

    def search(
        self, text: str, projects: frozenset[str] | None, since: datetime | None = None,
        until: datetime | None = None, limit: int = 50, snippets: bool = True,
    ) -> list[Hit]:
        with self._read() as cur:
            return queries.find(cur, text, projects, since, until, limit=limit, snippets=snippets)

    def meta(self) -> dict[str, str]:
        """The rebuild's keys (as the FTS5 side names them) and the document count."""
        with self._read() as cur:
            values = queries.meta(cur)
            values[META_DOCUMENTS] = str(queries.documents(cur))
        return values

    def close(self) -> None:
        """Nothing to close: the store owns the connection."""


def write_meta(transport: Transport, database: str, values: dict[str, str | None], at: datetime | None = None) -> None:
    """Set (or clear, with None) keys of `search_meta` as of `at` (default now); a key's newest row wins."""
    import pyarrow as pa

    now = at or utcnow()
    rows = pa.table({
        "key": pa.array(list(values), pa.string()),
        "value": pa.array(list(values.values()), pa.string()),
        "updated_at": pa.array([now] * len(values), pa.timestamp("us")),
    })  # fmt: skip
    transport.insert_arrow(f"`{database}`.`{SEARCH_META.name}`", rows)


class ClickHouseSearchRebuild:
    """`store.search_indexer` on ClickHouse: runs a rebuild in a thread of this node; `failed` is its
    last error until a window succeeds."""

    def __init__(self, transport: Callable[[], Transport | None], database: str, cluster: str | None = None) -> None:
        self._transport = transport
        self._db = database
        self._cluster = cluster
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = 0
        self._stopping = threading.Event()
        self.failed: str | None = None

    def _connection(self) -> Transport:
        transport = self._transport()
        if transport is None:
            raise ConnectionError("ClickHouse cannot be reached yet; retry the reindex shortly")
        return transport

    def _meta(self, transport: Transport) -> tuple[dict[str, str], dict[str, datetime]]:
        table = naive_utc(transport.query_arrow(f"SELECT key, latest, latest_at FROM ({queries.META_LATEST})"))
        keys, values, times = (table.column(i).to_pylist() for i in range(3))
        return dict(zip(keys, values, strict=True)), dict(zip(keys, times, strict=True))

    def request_rebuild(self, _store: Any = None) -> Future[dict[str, str]]:
        """Empty the documents and start writing them again from the stored spans (`reindex`)."""
        fut: Future[dict[str, str]] = Future()
        try:
            transport = self._connection()
            transport.command(self._truncate())
            self._begin(transport, started=utcnow())
            fut.set_result(self._meta(transport)[0])
        except Exception as exc:  # noqa: BLE001 - the caller (the API) answers it
            if environmental(exc) and not isinstance(exc, ConnectionError):
                exc = ConnectionError(f"ClickHouse cannot be written ({type(exc).__name__}); retry the reindex shortly")
            fut.set_exception(exc)
        return fut

    def resume_if_needed(self) -> None:
        """At start: resume a stalled rebuild, or build the documents of a store that has none yet
        (a store made before search existed on ClickHouse). Errors are logged, never raised."""
        try:
            transport = self._connection()
            meta, times = self._meta(transport)
            if META_REBUILD_NEXT in meta:
                if utcnow() - times[META_REBUILD_NEXT] >= STALLED_AFTER:
                    log.info("search index: resuming the rebuild a stopped node left at %s",
                             from_us(int(meta[META_REBUILD_NEXT])))
                    self._spawn()
            elif META_BUILT_AT not in meta and not self._has_documents(transport):
                self._begin(transport, started=utcnow())  # (a copied store brings its documents along)
        except Exception as exc:  # noqa: BLE001 - search must never keep the store from starting
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("search index: cannot check for a rebuild to resume: %s", self.failed)

    def _truncate(self) -> str:
        """Emptying the documents: on a cluster, the replicated local tables on every shard (a
        Distributed table holds no rows of its own)."""
        if self._cluster:
            cluster = "`" + self._cluster.replace("`", "``") + "`"
            return f"TRUNCATE TABLE `{self._db}`.`{SEARCH_DOCS.name}_local` ON CLUSTER {cluster}"
        return f"TRUNCATE TABLE `{self._db}`.`{SEARCH_DOCS.name}`"

    def _has_documents(self, transport: Transport) -> bool:
        table = transport.query_arrow(f"SELECT count() > 0 FROM `{self._db}`.`{SEARCH_DOCS.name}`")
        return bool(table.column(0)[0].as_py())

    def _begin(self, transport: Transport, started: datetime) -> None:
        extent = transport.query_arrow(f"SELECT min(start_time), max(start_time), count() FROM `{self._db}`.spans")
        lo, hi, n = (extent.column(i)[0].as_py() for i in range(3))
        if not n:
            write_meta(transport, self._db, {META_BUILT_AT: utcnow().isoformat(), META_REBUILD_NEXT: None,
                                             META_REBUILD_END: None, META_REBUILD_STARTED: None})
            return
        lo, hi = (naive(v) for v in (lo, hi))
        write_meta(transport, self._db, {
            META_REBUILD_NEXT: str(to_us(lo)), META_REBUILD_END: str(to_us(hi) + 1),
            META_REBUILD_STARTED: str(to_us(started)), META_BUILT_AT: None,
        })  # fmt: skip
        log.info("search index: rebuilding from the stored spans")
        self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._thread = threading.Thread(
                target=self._run, args=(generation,), name="steplens-clickhouse-search-rebuild", daemon=True
            )
            self._thread.start()

    def _run(self, generation: int) -> None:
        window = REBUILD_WINDOW
        backoff = 1.0
        while not self._stopping.is_set() and generation == self._generation:
            try:
                window, more = self._chunk(window, generation)
                self.failed = None
                backoff = 1.0
                if not more:
                    return
            except Exception as exc:  # noqa: BLE001 - retried with backoff; the position is kept
                self.failed = f"{type(exc).__name__}: {exc}"
                log.error("search index rebuild failed, retrying in %.0f s: %s", backoff, self.failed)
                self._stopping.wait(backoff)
                backoff = min(30.0, backoff * 2)

    def _chunk(self, window: timedelta, generation: int) -> tuple[timedelta, bool]:
        """Write one window's documents and move the position; (next window, more to do). A newer
        rebuild (`generation`) started meanwhile owns the position: this one stops without writing it."""
        transport = self._connection()
        meta, _ = self._meta(transport)
        if META_REBUILD_NEXT not in meta:
            return window, False
        lo, end = int(meta[META_REBUILD_NEXT]), int(meta[META_REBUILD_END])
        hi = min(end, lo + window // timedelta(microseconds=1))
        rows = self._span_rows(transport, "start_time >= {lo:DateTime64(6, 'UTC')} AND start_time < "
                               "{hi:DateTime64(6, 'UTC')}", {"lo": from_us(lo), "hi": from_us(hi)})
        search_load.insert_docs(transport, self._db, search_load.docs_of(rows), None)
        if len(rows) > REBUILD_ROWS and window > timedelta(seconds=1):
            window /= 2
        elif len(rows) < REBUILD_ROWS // 4:
            window *= 2
        if generation != self._generation:
            return window, False
        if hi < end:
            write_meta(transport, self._db, {META_REBUILD_NEXT: str(hi)})
            return window, True
        started = from_us(int(meta.get(META_REBUILD_STARTED, str(lo))))
        late = self._span_rows(transport, "ingested_at >= {since:DateTime64(6, 'UTC')}",
                               {"since": started - LATE_MARGIN})
        search_load.insert_docs(transport, self._db, search_load.docs_of(late), None)
        write_meta(transport, self._db, {META_BUILT_AT: utcnow().isoformat(), META_REBUILD_NEXT: None,
                                         META_REBUILD_END: None, META_REBUILD_STARTED: None})
        log.info("search index: rebuild finished")
        return window, False

    def _span_rows(self, transport: Transport, condition: str, params: dict[str, Any]) -> list[tuple]:
        columns = ", ".join(search_load.CONTENT_COLUMNS)
        table = naive_utc(transport.query_arrow(
            f"SELECT {columns} FROM `{self._db}`.spans FINAL WHERE {condition}", params
        ))  # fmt: skip
        return list(zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True))

    def close(self) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(10)


def naive(value: datetime) -> datetime:
    return value.replace(tzinfo=None) if value.tzinfo is not None else value
