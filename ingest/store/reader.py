"""Read cursors with a time limit, so one slow query cannot hang the query API.

Why a timer calling `interrupt()`: DuckDB has no per-statement timeout setting; interrupting the
cursor from another thread is the supported way to abort a running query. The timers are deadlines
of one shared thread (ingest/store/deadlines.py), not a thread per read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from ingest.store.deadlines import DeadlineWatcher

_WATCHER = DeadlineWatcher()


class QueryTimeout(TimeoutError):
    """A read ran past `query_timeout_s` and was interrupted (answer 503/504, not 500)."""


@contextmanager
def timed_cursor(cursor: duckdb.DuckDBPyConnection, timeout_s: float) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield `cursor`; interrupt it after `timeout_s`; close it on exit."""
    fired = threading.Event()

    def interrupt() -> None:
        fired.set()
        cursor.interrupt()

    timer = _WATCHER.after(timeout_s, interrupt)
    try:
        yield cursor
    except duckdb.InterruptException as exc:
        if fired.is_set():
            raise QueryTimeout(f"query exceeded the {timeout_s:g} s time limit") from exc
        raise
    finally:
        timer.cancel()
        cursor.close()
