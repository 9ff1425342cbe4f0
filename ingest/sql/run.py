"""Running a checked query: a time limit on its cursor, the first batch before the answer starts,
then the rows streamed out under the row and byte limits.

Why the first batch is read before answering: DuckDB does the work of an aggregate, a sort or a
join when the first batch is asked for, so most failures (the time limit, a value that does not
convert) happen there and can still be a proper 504 / 400. What fails later (a long scan running
past the time limit while rows stream out) ends the answer early; JSON says so in `error`.

Why a relation (`cursor.sql(...).to_arrow_reader()`) and not `cursor.execute()`: a DB-API result is
materialised whole before the first row comes back, a relation's reader streams.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ingest.errors import IngestError
from ingest.sql.check import Prepared
from ingest.sql.encode import Encoder

log = logging.getLogger(__name__)
_QUOTED = re.compile(r"'(?:[^']|'')*'")


@dataclass(frozen=True)
class SqlLimits:
    """What one query may use (settings `sql_*`, ingest/config.py)."""

    timeout_s: float
    max_rows: int
    max_result_bytes: int
    max_query_bytes: int
    batch_rows: int = 2048


class SqlTimeout(Exception):
    """The query ran past its time limit and was interrupted (a 504)."""


class SqlFailed(Exception):
    """DuckDB refused to run the query as written (a 400); the message is safe to show."""


class StoreUnavailable(Exception):
    """The database cannot be read right now (a 503)."""


def safe_message(exc: Exception, query: str) -> str:
    """DuckDB's message without quoted values the query did not contain.

    Why: a conversion error quotes the value that failed, and DuckDB may evaluate the query's own
    expressions on a row before the project condition has removed it; a value from another project
    must never reach the caller, not even in an error.
    """
    text = str(exc).strip().splitlines()[0][:500]
    return _QUOTED.sub(lambda m: m.group(0) if m.group(0) in query else "'…'", text)


class _Deadline:
    """Interrupts `cursor` after `timeout_s` (DuckDB has no per-statement timeout; see ingest/store/reader.py)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self.fired = threading.Event()

        def interrupt() -> None:
            self.fired.set()
            cursor.interrupt()

        self._timer = threading.Timer(timeout_s, interrupt)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()


class _CloseOnce:
    """Closes the query's resources exactly once, from whichever thread gets there first: the stream at
    its end, or the reaper shortly after the time limit when the stream was abandoned (a client gone
    before its first byte leaves a generator nobody closes, and its cursor and concurrency slot with it)."""

    REAP_AFTER_S = 2.0  # after the time limit: by then the interrupt has ended any fetch

    def __init__(self, stack: ExitStack, timeout_s: float) -> None:
        self._stack = stack
        self._lock = threading.Lock()
        self._closed = False
        self._reaper = threading.Timer(timeout_s + self.REAP_AFTER_S, self)
        self._reaper.daemon = True
        self._reaper.start()

    def __call__(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._reaper.cancel()
        self._stack.close()


@dataclass
class Started:
    """A query whose first batch has been computed; `rows()` streams the answer and closes it."""

    columns: list[str]
    types: list[str]
    schema: pa.Schema
    first: pa.RecordBatch | None
    reader: pa.RecordBatchReader
    close: Callable[[], None]
    limits: SqlLimits
    query: str
    fired: threading.Event  # set when the time limit interrupted the cursor

    def rows(self, encoder: Encoder) -> Iterator[bytes]:
        """The encoded answer: header, batches until the data or a limit ends, trailer."""
        sent_rows = sent_bytes = 0
        truncated_by: str | None = None
        error: str | None = None
        batch = self.first
        try:
            head = encoder.begin()
            sent_bytes += len(head)
            yield head
            while batch is not None:
                room = self.limits.max_rows - sent_rows
                if batch.num_rows > room:  # the query asked DuckDB for one row more than the limit
                    batch, truncated_by = batch.slice(0, room), "row_limit"
                if batch.num_rows:
                    fitted = self._fit(encoder, batch, sent_rows == 0, self.limits.max_result_bytes - sent_bytes)
                    if fitted is not None:
                        chunk, n = fitted
                        sent_rows += n
                        sent_bytes += len(chunk)
                        yield chunk
                    if fitted is None or n < batch.num_rows:
                        truncated_by = "byte_limit"
                        break
                if truncated_by:
                    break
                batch = self._next()
            yield encoder.end(sent_rows, truncated_by, None)
            return
        except SqlTimeout:
            error = f"the query ran past the time limit of {self.limits.timeout_s:g} s while streaming; rows cut"
        except SqlFailed as exc:
            error = f"the query failed while streaming: {exc}"
        except duckdb.Error as exc:
            error = f"the query failed while streaming: {safe_message(exc, self.query)}"
        finally:
            self.close()
        yield encoder.end(sent_rows, truncated_by, error)

    @staticmethod
    def _fit(encoder: Encoder, batch: pa.RecordBatch, first: bool, room: int) -> tuple[bytes, int] | None:
        """The encoded batch, or of its first half, quarter, ... row: the most leading rows that fit in
        `room` bytes (None: not even one row)."""
        while True:
            chunk = encoder.batch(batch, first)
            if len(chunk) <= room:
                return chunk, batch.num_rows
            if batch.num_rows <= 1:
                return None
            batch = batch.slice(0, batch.num_rows // 2)

    def _next(self) -> pa.RecordBatch | None:
        return _next_batch(self.reader, self.fired, self.query)


def _next_batch(reader: pa.RecordBatchReader, fired: threading.Event, query: str) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None
    except duckdb.InterruptException as exc:
        if fired.is_set():
            raise SqlTimeout() from exc
        raise
    except (pa.ArrowException, OSError) as exc:  # a DuckDB error while streaming surfaces as an Arrow/OS error
        if fired.is_set():
            raise SqlTimeout() from exc
        raise SqlFailed(safe_message(exc, query)) from exc


def start(
    store: Any, prepared: Prepared, limits: SqlLimits, query: str, on_close: Callable[[], None] | None = None
) -> Started:
    """Open a cursor, run the prepared query and compute its first batch.

    Raises SqlTimeout, SqlFailed or StoreUnavailable; on any failure the cursor is closed. `on_close`
    runs when the cursor closes (the answer streamed, or the start failed): the API's slot is freed.
    """
    if prepared.dialect == "clickhouse":
        from ingest.sql import run_clickhouse

        return run_clickhouse.start(store, prepared, limits, query, on_close)
    stack = ExitStack()
    if on_close is not None:
        stack.callback(on_close)
    deadline: _Deadline | None = None
    try:
        cursor = stack.enter_context(store.read())
        deadline = _Deadline(cursor, limits.timeout_s)
        stack.callback(deadline.cancel)
        try:
            relation = cursor.sql(prepared.sql, params=prepared.params)
        except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as exc:
            # found while binding, before any row is read: the message names the query's parts only
            raise SqlFailed(str(exc).strip().splitlines()[0][:500]) from exc
        columns = list(relation.columns)
        types = [str(t) for t in relation.types]
        reader = relation.to_arrow_reader(limits.batch_rows)
        first = _next_batch(reader, deadline.fired, query)
    except (SqlTimeout, SqlFailed):
        stack.close()
        raise
    except duckdb.InterruptException as exc:
        stack.close()
        raise SqlTimeout() from exc
    except TimeoutError as exc:  # the store's own query_timeout_s fired first
        stack.close()
        raise SqlTimeout() from exc
    except (duckdb.ConnectionException, duckdb.TransactionException, IngestError) as exc:
        stack.close()
        raise StoreUnavailable(str(exc)) from exc
    except duckdb.InternalException as exc:  # a DuckDB bug the query ran into: logged, answered as a refusal
        stack.close()
        log.warning("DuckDB internal error on a POST /api/sql query: %s", exc)
        raise SqlFailed(f"DuckDB cannot run this query (internal error): {safe_message(exc, query)}") from exc
    except duckdb.Error as exc:
        stack.close()
        if deadline is not None and deadline.fired.is_set():
            raise SqlTimeout() from exc
        raise SqlFailed(safe_message(exc, query)) from exc
    except BaseException:
        stack.close()
        raise
    closer = _CloseOnce(stack, limits.timeout_s)
    return Started(columns, types, reader.schema, first, reader, closer, limits, query, deadline.fired)
