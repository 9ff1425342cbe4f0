"""What a ClickHouse write function gets from `ClickHouseStore.run_write`: a cursor that can also
insert rows of a known table, and the revisions that order row versions.

Why rows as dicts checked against the Table: ClickHouse stores a type's default for a NULL in a
non-Nullable column, so a missing value would silently become '' or 0; `insert` refuses it (the
DuckDB tables' NOT NULL) and builds the Arrow columns from the table's declared types, so an empty
list or an all-NULL column still has its type.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ingest.store.clickhouse.cursor import ClickHouseCursor
from ingest.store.clickhouse.schema import Table
from ingest.store.clickhouse.transport import Transport

_ARROW = {
    "String": pa.string(),
    "DateTime64(6, 'UTC')": pa.timestamp("us"),
    "Float64": pa.float64(),
    "Int64": pa.int64(),
    "Int32": pa.int32(),
    "Bool": pa.bool_(),
    "Array(String)": pa.list_(pa.string()),
    "UInt64": pa.uint64(),
    "UInt8": pa.uint8(),
}

_lock = threading.Lock()
_last = 0


def next_revision() -> int:
    """A revision above every earlier one of this process (nanoseconds now, strictly increasing), so
    a later write of a row replaces an earlier one even within one clock tick."""
    global _last
    with _lock:
        _last = max(time.time_ns(), _last + 1)
        return _last


def _naive(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def arrow_rows(table: Table, rows: list[dict[str, Any]]) -> pa.Table:
    """`rows` as an Arrow table of exactly `table`'s columns; ValueError for an unknown column or a
    missing value of a non-Nullable one."""
    known = set(table.column_names)
    for row in rows:
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"{table.name} has no column {', '.join(sorted(unknown))}")
    arrays = []
    for name, ch_type in table.columns:
        nullable = ch_type.startswith("Nullable(")
        inner = ch_type[len("Nullable("):-1] if nullable else ch_type
        values = [_naive(row.get(name)) for row in rows]
        if inner.startswith("Array"):
            values = [list(v) if v is not None else [] for v in values]
        elif not nullable and any(v is None for v in values):
            raise ValueError(f"{table.name}.{name} must not be NULL")
        arrays.append(pa.array(values, _ARROW[inner]))
    return pa.Table.from_arrays(arrays, names=table.column_names)


class WorkConnection(ClickHouseCursor):
    """A cursor (reads `final = 1`) that inserts rows: one insert is one block, atomic on its own."""

    def __init__(self, transport: Transport, database: str, timeout_s: float | None = None) -> None:
        super().__init__(transport, timeout_s)
        self.database = database

    def _settings(self, final: bool = True) -> dict[str, Any]:
        # an INSERT ... SELECT (`rewrite`) is synchronous on a Distributed table too
        return {**super()._settings(final), "insert_distributed_sync": 1}

    def insert(self, table: Table, rows: list[dict[str, Any]], token: str | None = None) -> None:
        """Insert `rows` into `table`; `token`: an `insert_deduplication_token`, so the same insert
        sent again (a retry after a timeout that did land, a restart redoing it) is stored once."""
        if not rows:
            return
        # synchronous on a Distributed table too: the write function reads back what it inserted
        settings: dict[str, Any] = {"insert_distributed_sync": 1}
        if token:
            settings["insert_deduplication_token"] = token
        name = f"`{self.database}`.`{table.name}`"
        self._transport.insert_arrow(name, arrow_rows(table, rows), settings)

    def rewrite(self, table: Table, where: str, params: list[Any], changes: dict[str, Any]) -> None:
        """A new version of every current row of `table` matching `where` (SQL with `?`, columns of
        the table), with `changes` applied; `{"is_deleted": 1}` makes them tombstones. One
        INSERT ... SELECT on the server: the rows never travel, and their other columns stay as
        they are. `changes` names columns of the module's tables, never input."""
        unknown = set(changes) - set(table.column_names)
        if unknown:
            raise ValueError(f"{table.name} has no column {', '.join(sorted(unknown))}")
        sets = {**changes, "revision": next_revision()}
        replace = ", ".join(f"? AS `{column}`" for column in sets)
        name = f"`{self.database}`.`{table.name}`"
        # the rows are selected in a subquery: an alias of the outer SELECT (`? AS status`) would
        # otherwise replace that column in the WHERE (ClickHouse lets aliases be used there)
        self.execute(f"INSERT INTO {name} SELECT * REPLACE ({replace}) FROM (SELECT * FROM {name} WHERE {where})",
                     [*sets.values(), *params])
