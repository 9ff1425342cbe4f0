"""What each exported table is, and the one query that reads it page by page.

Why keyset pages and not one long query: a read cursor is time-limited (`query_timeout_s`) and an
export of millions of rows takes longer than any sane limit. Each page is its own short read,
ordered by (time, project, key...) and resumed strictly after the last row sent, so an export of
any size finishes, never repeats a row and never holds a transaction open while the client is slow.
Rows that arrive during an export appear when they sort after the position already reached.

Columns: everything the table stores (a warehouse gets the whole row), except `trace_key`, an
internal lookup hash. JSON columns stay JSON text in Parquet and become objects in JSON lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from ingest.queries.filters import Where, project_clause


@dataclass(frozen=True)
class TableSpec:
    """One exportable table: its time column (the `--since` bound) and its order key after time."""

    name: str
    time_sql: str  # SQL expression of the row's time (the keyset's first part)
    keys: tuple[str, ...]  # the rest of the keyset: unique together with project and time
    internal: tuple[str, ...] = ()  # stored columns not exported


RUNS = TableSpec("runs", "coalesce(start_time, span_start, updated_at)", ("trace_id",))
SPANS = TableSpec("spans", "start_time", ("trace_id", "span_id"))
SCORES = TableSpec("scores", "created_at", ("score_id",), internal=("trace_key",))
TABLES: dict[str, TableSpec] = {t.name: t for t in (RUNS, SPANS, SCORES)}

# Internal keyset columns added to every page (time, project, keys...) and removed before encoding.
TIME_COL = "__export_time"
KEY_PREFIX = "__export_key"


@dataclass(frozen=True)
class Position:
    """Where the previous page ended: its last row's time, project and keys."""

    time: datetime
    project: str
    keys: tuple[str, ...]


def exported_columns(cur: duckdb.DuckDBPyConnection, table: TableSpec) -> list[tuple[str, str]]:
    """(name, type) of the table's stored columns in their stored order, without the internal ones."""
    rows = cur.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? AND table_schema = 'main' "
        "ORDER BY ordinal_position",
        [table.name],
    ).fetchall()
    return [(r[0], r[1]) for r in rows if r[0] not in table.internal]


def _where(
    table: TableSpec, projects: frozenset[str] | None, since: datetime | None, until: datetime | None
) -> Where:
    where = Where()
    project_clause(where, projects)
    if since is not None:
        where.add(f"{table.time_sql} >= ?", since)
    if until is not None:
        where.add(f"{table.time_sql} < ?", until)
    return where


def count_rows(
    cur: duckdb.DuckDBPyConnection, table: TableSpec, projects: frozenset[str] | None,
    since: datetime | None, until: datetime | None,
) -> int:
    """How many rows the export will send (what arrives meanwhile may add to it)."""
    where = _where(table, projects, since, until)
    return int(cur.execute(f"SELECT count(*) FROM {table.name} WHERE {where.sql()}", where.params).fetchone()[0])


def read_page(
    cur: duckdb.DuckDBPyConnection, table: TableSpec, columns: Sequence[str], projects: frozenset[str] | None,
    since: datetime | None, until: datetime | None, after: Position | None, limit: int,
) -> tuple[pa.Table, Position | None]:
    """One page of rows strictly after `after`, in keyset order, and the position of its last row.

    Column names come from the table's own catalog (`exported_columns`), never from the caller.
    """
    where = _where(table, projects, since, until)
    order = [table.time_sql, "project", *table.keys]
    if after is not None:
        placeholders = ", ".join("?" for _ in order)
        # the plain bound on time is implied by the row comparison, but only it lets DuckDB skip the row
        # groups already exported by their zone maps (rows are stored roughly in time order), so a page
        # costs what is left to export, not the whole table
        where.add(f"{table.time_sql} >= ?", after.time)
        where.add(f"({', '.join(order)}) > ({placeholders})", after.time, after.project, *after.keys)
    select = ", ".join(f'"{c}"' for c in columns)
    marks = [TIME_COL, *(f"{KEY_PREFIX}{i}" for i in range(len(order) - 1))]
    keyset = ", ".join(f"{expr} AS {mark}" for expr, mark in zip(order, marks, strict=True))
    sql = (
        f"SELECT {select}, {keyset} FROM {table.name} WHERE {where.sql()} "
        f"ORDER BY {', '.join(order)} LIMIT ?"
    )
    page = cur.sql(sql, params=[*where.params, limit]).to_arrow_table()
    position = None
    if page.num_rows:
        last: dict[str, Any] = page.select(marks).slice(page.num_rows - 1).to_pylist()[0]
        position = Position(last[marks[0]], last[marks[1]], tuple(last[m] for m in marks[2:]))
    return page.drop_columns(marks), position
