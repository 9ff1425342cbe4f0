"""Runs a read against the store and turns every failure into a clear HTTP answer.

Why a single helper: every endpoint must go through `store.read()` (whose cursor is interrupted
after the configured time limit) and must answer a timeout or an unavailable store the same way,
with a message a user can act on, never a hung request or a bare 500 stack trace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import duckdb
from fastapi import HTTPException

from ingest.errors import IngestError
from ingest.store.failures import environmental

log = logging.getLogger(__name__)
T = TypeVar("T")


class ReadableStore(Protocol):
    """What the query API needs from the store: a context manager yielding a time-limited cursor."""

    def read(self) -> AbstractContextManager[Any]: ...


def run_read(store: ReadableStore, fn: Callable[[Any], T], timeout_s: float | None = None) -> T:
    """Call `fn(cursor)` inside `store.read()`; map failures to 503/504/500 with clear messages."""
    limit = f" of {timeout_s:g} s" if timeout_s else ""
    try:
        with store.read() as cur:
            return fn(cur)
    except HTTPException:
        raise
    except duckdb.InterruptException as exc:
        raise HTTPException(
            504, f"query exceeded the time limit{limit}: narrow the time range or filters and retry"
        ) from exc
    except TimeoutError as exc:
        raise HTTPException(504, f"query exceeded the time limit{limit}: narrow the time range or filters") from exc
    except IngestError as exc:
        mapping = exc.mapping
        status = 503 if mapping.retryable else mapping.http_status
        headers = {"Retry-After": str(getattr(exc, "retry_after", 1))} if status == 503 else None
        raise HTTPException(status, exc.message, headers=headers) from exc
    except (duckdb.ConnectionException, duckdb.TransactionException) as exc:
        log.warning("query store unavailable: %s", exc)
        raise HTTPException(503, "store unavailable, retry shortly", headers={"Retry-After": "1"}) from exc
    except duckdb.Error as exc:
        log.exception("query failed")
        raise HTTPException(500, f"query failed: {type(exc).__name__}") from exc
    except Exception as exc:
        if not _clickhouse_error(exc):
            raise
        if environmental(exc):
            log.warning("query store unavailable: %s", exc)
            raise HTTPException(503, "store unavailable, retry shortly", headers={"Retry-After": "1"}) from exc
        log.exception("query failed")
        raise HTTPException(500, f"query failed: {type(exc).__name__}") from exc


def _clickhouse_error(exc: BaseException) -> bool:
    """An error of the ClickHouse clients (chDB, clickhouse-connect): answered like DuckDB's."""
    return type(exc).__module__.split(".")[0] in ("chdb", "clickhouse_connect")
