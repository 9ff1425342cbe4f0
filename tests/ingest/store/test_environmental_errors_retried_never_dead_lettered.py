"""Transient vs poison: an environmental failure (out of memory, a full disk, I/O, the aborted
transaction that follows an out-of-memory) is retried with backoff and the record is stored once
the environment recovers; only a record that fails on its own is dead-lettered. One test per class
of the table in ingest/store/failures.py, each with the error DuckDB or the OS really raises.

DuckDB only: it raises the errors DuckDB's writer meets (ClickHouse's:
tests/ingest/store/clickhouse/test_clickhouse_unreachable_answers_503_and_resumes.py)."""

from __future__ import annotations

import errno
import threading
from datetime import datetime

import duckdb
import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import spans_table
from ingest.store.failures import Failure, classify
from tests.ingest.store.otlp_build import agent_run, request


def _raised(conn: duckdb.DuckDBPyConnection, *statements: str) -> BaseException:
    for i, sql in enumerate(statements):
        try:
            conn.execute(sql)
        except duckdb.Error as exc:
            if i == len(statements) - 1:
                return exc
    raise AssertionError("the last statement did not fail")


@pytest.fixture
def conn() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    yield c
    c.close()


def test_out_of_memory_is_transient(conn) -> None:
    conn.execute("SET memory_limit = '1MB'")
    exc = _raised(conn, "SELECT list(repeat('x', 1000)) FROM range(100000)")
    assert isinstance(exc, duckdb.OutOfMemoryException) and classify(exc) is Failure.TRANSIENT


def test_aborted_transaction_after_a_failure_is_transient(conn) -> None:
    conn.execute("CREATE TABLE t (a INTEGER NOT NULL)")
    conn.execute("BEGIN")
    exc = _raised(conn, "INSERT INTO t VALUES (NULL)", "SELECT 1")
    conn.execute("ROLLBACK")
    assert "current transaction is aborted" in str(exc).lower() and classify(exc) is Failure.TRANSIENT


def test_disk_full_os_error_is_transient() -> None:
    assert classify(OSError(errno.ENOSPC, "No space left on device")) is Failure.TRANSIENT
    assert classify(OSError(errno.EIO, "Input/output error")) is Failure.TRANSIENT


def test_commit_hitting_enospc_is_transient_though_a_transaction_exception() -> None:
    # the class DuckDB 2.x raises for a WAL write that hits a full disk (seen on a real tmpfs)
    exc = duckdb.TransactionException(
        'TransactionContext Error: Failed to commit: Could not write file "x.wal": No space left on device'
    )
    assert classify(exc) is Failure.TRANSIENT


def test_invalidated_database_is_reopened() -> None:
    exc = duckdb.FatalException(
        "FATAL Error: Failed: database has been invalidated because of a previous fatal error. "
        "The database must be restarted prior to being used again."
    )
    assert classify(exc) is Failure.REOPEN
    io = duckdb.IOException('IO Error: Checkpoint failed for database "steplens". The database has been invalidated.')
    assert classify(io) is Failure.REOPEN


def test_data_errors_are_poison(conn) -> None:
    conn.execute("CREATE TABLE t (a INTEGER NOT NULL)")
    assert classify(_raised(conn, "INSERT INTO t VALUES (NULL)")) is Failure.POISON
    assert classify(_raised(conn, "SELECT 1e308::DECIMAL(18, 6)")) is Failure.POISON
    assert classify(_raised(conn, "SELECT 'abc'::INTEGER")) is Failure.POISON
    assert classify(ValueError("normalizer bug")) is Failure.POISON


def test_internal_error_is_fatal() -> None:
    assert classify(duckdb.InternalException("INTERNAL Error: assertion failed")) is Failure.FATAL


async def test_real_out_of_memory_during_load_retried_then_stored(open_store) -> None:
    """The writer's DuckDB runs out of memory for real on a record; once memory is given back the same
    record loads, nothing is dead-lettered, and meanwhile the store says why it is not ready."""
    store = open_store(duckdb_memory_limit="256MB")
    warm, warm_kids = agent_run(steps=1)
    await store.submit("p", request([warm, *warm_kids]))
    assert store.wait_loaded(20)
    with store.read() as cur:
        cur.execute("SET GLOBAL memory_limit = '8MB'")
    root, kids = agent_run(steps=40)
    big = {"steplens.test.blob": "x" * 200_000}
    for k in kids:
        k.attrs.update(big)
    await store.submit("p", request([root, *kids]))
    deadline = threading.Event()
    for _ in range(200):
        if store.stats().unwritable is not None:
            break
        deadline.wait(0.05)
    assert store.stats().unwritable is not None and "Out of Memory" in store.stats().unwritable
    assert store.stats().records_dead_lettered == 0
    with store.read() as cur:
        cur.execute("SET GLOBAL memory_limit = '256MB'")
    assert store.wait_loaded(30)
    with store.read() as cur:
        count = cur.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [root.trace_id]).fetchall()[0][0]
    assert count == 1 + len(kids)
    assert store.stats().records_dead_lettered == 0 and store.ready()


class _FlakyNormalizer:
    """Raises MemoryError for the first `fails` calls on one project, as a normalizer under memory
    pressure does, then works."""

    def __init__(self, fails: int) -> None:
        self.fails = fails

    def __call__(self, project: str, req: ExportTraceServiceRequest, ingested_at: datetime) -> pa.Table:
        if project == "pressure" and self.fails > 0:
            self.fails -= 1
            raise MemoryError("normalizer out of memory")
        return spans_table(project, req, ingested_at)


async def test_normalizer_memory_error_retried_not_dead_lettered(open_store) -> None:
    flaky = _FlakyNormalizer(fails=4)  # the ack-time attempt and 3 writer attempts fail
    store = open_store(store_kwargs={"normalizer": flaky})
    root, kids = agent_run(steps=1)
    await store.submit("pressure", request([root, *kids]))
    assert store.wait_loaded(30)
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchall()[0][0] == 4
    assert store.stats().records_dead_lettered == 0 and flaky.fails == 0
