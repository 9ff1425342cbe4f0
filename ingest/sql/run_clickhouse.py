"""Running a prepared `POST /api/sql` query on the ClickHouse store (ingest/sql/run.py runs DuckDB's).

Why a whole answer and not a stream: the ClickHouse cursor returns an Arrow table (chDB and the HTTP
transport both do), cut at the prepared query's `max_rows + 1` rows by its LIMIT; it is then
streamed out batch by batch under the same row and byte limits as on DuckDB. The time limit is
`sql_timeout_s` as the statement's `max_execution_time` (whole seconds).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pyarrow as pa

from ingest.errors import IngestError
from ingest.sql.check import Prepared
from ingest.sql.clickhouse import duckdb_type
from ingest.sql.run import (
    SqlFailed,
    SqlLimits,
    SqlTimeout,
    Started,
    StoreUnavailable,
    _CloseOnce,
    safe_message,
)


def start(
    store: Any, prepared: Prepared, limits: SqlLimits, query: str, on_close: Callable[[], None] | None = None
) -> Started:
    """Run the prepared query and hold its answer; raises SqlTimeout, SqlFailed or StoreUnavailable."""
    stack = ExitStack()
    if on_close is not None:
        stack.callback(on_close)
    try:
        cursor = stack.enter_context(store.read())
        # sql_timeout_s (whole seconds, at least 1) as the statement's own limit, under the cursor's
        limit_s = max(1, math.ceil(limits.timeout_s))
        sql = f"{prepared.sql}, max_execution_time = {limit_s}, timeout_overflow_mode = 'throw'"
        table: pa.Table = cursor.execute(sql, prepared.params).fetch_arrow_table()
    except TimeoutError as exc:  # the cursor's time limit (ClickHouseQueryTimeout)
        stack.close()
        raise SqlTimeout() from exc
    except IngestError as exc:
        stack.close()
        raise StoreUnavailable(str(exc)) from exc
    except Exception as exc:
        stack.close()
        if type(exc).__module__.split(".")[0] not in ("chdb", "clickhouse_connect"):
            raise
        raise SqlFailed(safe_message(_first_line(exc), query)) from exc
    except BaseException:
        stack.close()
        raise
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=limits.batch_rows))
    first = _next(reader)
    columns = list(table.column_names)
    types = [duckdb_type(f.name, f.type) for f in table.schema]
    closer = _CloseOnce(stack, limits.timeout_s)
    return Started(columns, types, table.schema, first, reader, closer, limits, query, threading.Event())


def _first_line(exc: Exception) -> Exception:
    """ClickHouse's message without the echoed statement (it would show the server's CTEs)."""
    text = str(exc).split("In scope", 1)[0].strip()
    return type(exc)(text)


def _next(reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None
