"""A DB-API-like cursor over a ClickHouse transport, so this backend's query modules have the
shape of the DuckDB ones: `cur.execute(sql, params)`, `cur.fetchall()`, `cur.description`.

Why `?` placeholders: the DuckDB queries bind positionally; keeping `?` lets a query be
translated clause by clause. Each `?` (outside string literals and quoted names) becomes a typed
server-side parameter `{pN:Type}` with the type taken from the Python value, so values never
enter the SQL text. Timestamps come back naive UTC, as DuckDB returns them. Every statement runs
with `final = 1`: the ReplacingMergeTree tables read deduplicated (the latest run version, a span
once, no tombstones) without each query saying FINAL.
"""

from __future__ import annotations

import math
import time
from datetime import date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.store.clickhouse.transport import Transport


class ClickHouseQueryTimeout(TimeoutError):
    """A read ran past the cursor's time limit (the API answers 504)."""


def _scalar_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, datetime):
        return "DateTime64(6, 'UTC')"
    if isinstance(value, date):
        return "Date"
    return "String"


def param_type(value: Any) -> str:
    """The ClickHouse type of a parameter value (None: Nullable(String); lists: Array of the first
    non-null element's type)."""
    if value is None:
        return "Nullable(String)"
    if isinstance(value, list | tuple):
        inner = next((v for v in value if v is not None), "")
        element = _scalar_type(inner)
        if any(v is None for v in value):
            element = f"Nullable({element})"
        return f"Array({element})"
    return _scalar_type(value)


def bind(sql: str, params: list[Any] | tuple[Any, ...] | dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """`sql` with each `?` replaced by `{pN:Type}` and the parameter dict; a dict is passed through
    (the SQL then already uses `{name:Type}`)."""
    if params is None:
        return sql, {}
    if isinstance(params, dict):
        return sql, dict(params)
    values = list(params)
    out: list[str] = []
    bound: dict[str, Any] = {}
    quote: str | None = None
    i = 0
    while i < len(sql):
        ch = sql[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < len(sql):
                out.append(sql[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in ("'", '"', "`"):
            quote = ch
            out.append(ch)
        elif ch == "?":
            n = len(bound)
            if n >= len(values):
                raise ValueError(f"the SQL has more ? placeholders than the {len(values)} parameter(s) given")
            value = values[n]
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("a non-finite float cannot be a query parameter")
            bound[f"p{n}"] = value
            out.append(f"{{p{n}:{param_type(value)}}}")
        else:
            out.append(ch)
        i += 1
    if len(bound) != len(values):
        raise ValueError(f"{len(values)} parameter(s) given for {len(bound)} ? placeholder(s)")
    return "".join(out), bound


def naive_utc(table: pa.Table) -> pa.Table:
    """Timestamp columns with a time zone as naive UTC (DuckDB's TIMESTAMP), so query code and the
    API see the same Python values from both stores."""
    for index, column_field in enumerate(table.schema):
        if pa.types.is_timestamp(column_field.type) and column_field.type.tz is not None:
            column = pc.cast(table.column(index), pa.timestamp(column_field.type.unit))
            table = table.set_column(index, pa.field(column_field.name, column.type), column)
    return table


class ClickHouseCursor:
    """One query at a time; results held as an Arrow table. `timeout_s` is the read's whole budget:
    each statement gets what is left of it as `max_execution_time`."""

    def __init__(self, transport: Transport, timeout_s: float | None = None) -> None:
        self._transport = transport
        self._deadline = time.monotonic() + timeout_s if timeout_s else None
        self._timeout_s = timeout_s
        self._table: pa.Table | None = None
        self._rows: list[tuple[Any, ...]] | None = None
        self._next = 0
        self.closed = False

    def _settings(self, final: bool = True) -> dict[str, Any]:
        # `final`: every table read as if with FINAL, so a read never sees a replaced run version,
        # a retried span not merged yet or a tombstone, whether or not the query says FINAL
        settings: dict[str, Any] = {"final": 1} if final else {}
        if self._deadline is None:
            return settings
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise ClickHouseQueryTimeout(f"query exceeded the {self._timeout_s:g} s time limit")
        return {**settings, "max_execution_time": max(1, math.ceil(left)), "timeout_overflow_mode": "throw"}

    def execute(self, sql: str, params: list[Any] | tuple[Any, ...] | dict[str, Any] | None = None) -> ClickHouseCursor:
        if self.closed:
            raise RuntimeError("the cursor is closed")
        text, bound = bind(sql, params)
        try:
            table = self._transport.query_arrow(text, bound, self._settings())
        except Exception as exc:
            if "TIMEOUT_EXCEEDED" in str(exc) or "Timeout exceeded" in str(exc):
                raise ClickHouseQueryTimeout(f"query exceeded the {self._timeout_s:g} s time limit") from exc
            raise
        self._table = naive_utc(table)
        self._rows = None
        self._next = 0
        return self

    def command(self, sql: str, params: list[Any] | tuple[Any, ...] | None = None) -> None:
        """A statement without a result (an INSERT ... SELECT of bound values), within the same
        time budget. A Distributed table forwards it before answering, so the next read sees it."""
        if self.closed:
            raise RuntimeError("the cursor is closed")
        text, bound = bind(sql, params)
        self._transport.command(text, bound, {**self._settings(final=False), "insert_distributed_sync": 1})

    @property
    def description(self) -> list[tuple[str, str, None, None, None, None, None]] | None:
        if self._table is None:
            return None
        return [(f.name, str(f.type), None, None, None, None, None) for f in self._table.schema]

    def _all_rows(self) -> list[tuple[Any, ...]]:
        if self._table is None:
            raise RuntimeError("no query was executed")
        if self._rows is None:
            columns = [column.to_pylist() for column in self._table.columns]
            self._rows = list(zip(*columns, strict=True)) if columns else []
        return self._rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._all_rows()[self._next :]
        self._next = len(self._all_rows())
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._all_rows()
        if self._next >= len(rows):
            return None
        self._next += 1
        return rows[self._next - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows = self._all_rows()[self._next : self._next + size]
        self._next += len(rows)
        return rows

    def fetch_arrow_table(self) -> pa.Table:
        if self._table is None:
            raise RuntimeError("no query was executed")
        return self._table

    def insert(self, table: str, rows: pa.Table) -> None:
        """Insert `rows` (columns named as `table`'s) in one block: the small writes of the services
        on this store (alert state and events). `table` is a module constant, never input."""
        if self.closed:
            raise RuntimeError("the cursor is closed")
        quoted = "`" + table.replace("`", "``") + "`"
        self._transport.insert_arrow(quoted, rows)

    def close(self) -> None:
        self.closed = True
        self._table = None
        self._rows = None
