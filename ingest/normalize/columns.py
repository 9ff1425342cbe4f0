"""The Arrow schema of the `spans` table, read from `ingest/schema.py`'s DDL.

Why derive it instead of writing it twice: the DDL is the contract with the store; a column
added or retyped there must not silently diverge from what the normalizer hands over.
"""

from __future__ import annotations

import re

import pyarrow as pa

from ingest.schema import ANALYTICS_SPAN_COLUMNS, CONVENTION_SPAN_COLUMNS, SPANS_DDL

_ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "TIMESTAMP": pa.timestamp("us"),
    "DOUBLE": pa.float64(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "BOOLEAN": pa.bool_(),
    "JSON": pa.json_(),  # DuckDB reads the arrow.json extension type as JSON
}

_COLUMN_LINE = re.compile(r"^\s+(\w+)\s+([A-Z]+)(\s+NOT NULL)?", re.MULTILINE)
_ADDED_COLUMN = re.compile(r"ADD COLUMN IF NOT EXISTS (\w+) ([A-Z]+)$")


def _parse_ddl(ddl: str, added: list[str]) -> pa.Schema:
    """The CREATE TABLE's columns, then those later migrations ADD, in that order (DuckDB's order)."""
    fields = []
    for name, sql_type, not_null in _COLUMN_LINE.findall(ddl.split("(", 1)[1]):
        fields.append(pa.field(name, _ARROW_TYPES[sql_type], nullable=not not_null))
    for statement in added:
        match = _ADDED_COLUMN.search(statement)
        if match is None:
            raise ValueError(f"unrecognised spans migration: {statement!r}")
        fields.append(pa.field(match.group(1), _ARROW_TYPES[match.group(2)]))
    return pa.schema(fields)


SPANS_SCHEMA: pa.Schema = _parse_ddl(SPANS_DDL, [*ANALYTICS_SPAN_COLUMNS, *CONVENTION_SPAN_COLUMNS])
