"""The one thread of a ClickHouse node that runs the services' write functions (`run_write`).

Why one thread and not the span writer's: ClickHouse needs no single writer for spans, and a write
of a person waiting on an answer (take the next queue item) must not queue behind a load batch that
is retrying an unreachable server. Why one: a write function's reads and inserts (is the item still
open? then claim it) have no other write of this node in between, which is what the DuckDB store's
transactions on its writer thread give; across nodes, each table has one owning node
(docs/design.md §3).

Why each write first waits for the loads acknowledged before it (`wait_loaded`, bounded): on DuckDB
a write queues behind those loads on the one writer thread, so whatever a service stored through
the spool just before (the score an evaluation gave, the labels a person submitted) is queryable
once the write that follows it is. The same order holds here: an evaluation's outcome is never
visible before its score.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from ingest.errors import StorageUnavailable
from ingest.store.clickhouse.transport import Transport
from ingest.store.clickhouse.work.connection import WorkConnection

T = TypeVar("T")
LOADED_WAIT_S = 30.0  # how long a write waits for the loads acknowledged before it


class WorkRunner:
    """`submit(fn)` runs `fn(WorkConnection)` on the thread; its Future has the result or the error."""

    def __init__(self, transport: Callable[[], Transport | None], database: str, timeout_s: float | None,
                 retry_after_s: float, wait_loaded: Callable[[float], bool] = lambda _t: True) -> None:
        self._transport = transport
        self._wait_loaded = wait_loaded
        self._database = database
        self._timeout_s = timeout_s
        self._retry_after_s = retry_after_s
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="steplens-clickhouse-work")

    def _run(self, fn: Callable[[WorkConnection], T]) -> T:
        # bounded: with ClickHouse unreachable the loads wait, and the write then fails on its own
        self._wait_loaded(LOADED_WAIT_S)
        transport = self._transport()
        if transport is None:
            raise StorageUnavailable("ClickHouse cannot be reached yet; retry shortly", self._retry_after_s)
        conn = WorkConnection(transport, self._database, self._timeout_s)
        try:
            return fn(conn)
        finally:
            conn.close()

    def submit(self, fn: Callable[[Any], T]) -> Future[T]:
        if self._pool is None:
            raise RuntimeError("the span store is stopped")
        return self._pool.submit(self._run, fn)

    def close(self) -> None:
        """Finish the writes already submitted, then stop the thread."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
