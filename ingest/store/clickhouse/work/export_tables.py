"""ClickHouse form of `ingest.export.tables`: the columns of an exported table, its row count and
one keyset page.

The same tables, keyset order and columns as DuckDB's (the stored columns without the internal
ones); the columns only ClickHouse keeps (`revision`, `is_deleted`: bookkeeping of row versions)
are never exported. Which columns are JSON is the DuckDB schema's (`JSON_COLUMNS`: ClickHouse keeps
them as String), so JSON lines inline them as objects on both stores. Rows are read FINAL (the
cursor's `final = 1`): a replaced run version or score is exported once, as its latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from ingest.export.tables import KEY_PREFIX, TIME_COL, Position, TableSpec, _where
from ingest.store.clickhouse.schema import TABLES

__all__ = ["Position", "count_rows", "exported_columns", "read_page"]

JSON_COLUMNS = {"spans": ("attributes", "events", "resource"), "runs": ("agents",), "scores": ("metadata",)}
BOOKKEEPING = ("revision", "is_deleted")


def exported_columns(cur: Any, table: TableSpec) -> list[tuple[str, str]]:
    """(name, kind) of the table's stored columns in their stored order, without the internal ones;
    kind "JSON" for a JSON column (what the encoders look at), else the ClickHouse type."""
    schema = next(t for t in TABLES if t.name == table.name)
    json_columns = JSON_COLUMNS.get(table.name, ())
    return [(name, "JSON" if name in json_columns else ch_type) for name, ch_type in schema.columns
            if name not in table.internal and name not in BOOKKEEPING]


def count_rows(cur: Any, table: TableSpec, projects: frozenset[str] | None,
               since: datetime | None, until: datetime | None) -> int:
    """How many rows the export will send (what arrives meanwhile may add to it)."""
    where = _where(table, projects, since, until)
    row = cur.execute(f"SELECT count() FROM {table.name} WHERE {where.sql()}", where.params).fetchone()
    return int(row[0]) if row else 0


def read_page(
    cur: Any, table: TableSpec, columns: Sequence[str], projects: frozenset[str] | None,
    since: datetime | None, until: datetime | None, after: Position | None, limit: int,
) -> tuple[pa.Table, Position | None]:
    """One page of rows strictly after `after`, in keyset order, and the position of its last row.
    Column names come from the table's schema (`exported_columns`), never from the caller."""
    where = _where(table, projects, since, until)
    order = [table.time_sql, "project", *table.keys]
    if after is not None:
        placeholders = ", ".join("?" for _ in order)
        where.add(f"{table.time_sql} >= ?", after.time)  # lets the minmax index skip what was exported
        where.add(f"({', '.join(order)}) > ({placeholders})", after.time, after.project, *after.keys)
    select = ", ".join(f"`{c}`" for c in columns)
    marks = [TIME_COL, *(f"{KEY_PREFIX}{i}" for i in range(len(order) - 1))]
    keyset = ", ".join(f"{expr} AS {mark}" for expr, mark in zip(order, marks, strict=True))
    cur.execute(f"SELECT {select}, {keyset} FROM {table.name} WHERE {where.sql()} "
                f"ORDER BY {', '.join(order)} LIMIT ?", [*where.params, limit])
    page = cur.fetch_arrow_table()
    position = None
    if page.num_rows:
        last: dict[str, Any] = page.select(marks).slice(page.num_rows - 1).to_pylist()[0]
        position = Position(last[marks[0]], last[marks[1]], tuple(last[m] for m in marks[2:]))
    return page.drop_columns(marks), position
