"""The three answer formats of `POST /api/sql`, written batch by batch as the rows stream out.

Why one encoder per format with begin/batch/end: the rows come from DuckDB as Arrow record batches,
and the answer is streamed, so each format must be writable incrementally. JSON carries the
columns with their DuckDB types up front and, at the end, how many rows were sent and whether the
row or byte limit cut the answer (or the time limit stopped it midway); CSV and Arrow IPC have no
place for a trailer, so they end where the limit cut them (the `X-Steplens-Row-Limit` header says
what the limit was).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from decimal import Decimal
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

MEDIA_TYPES = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "arrow": "application/vnd.apache.arrow.stream",
}


class Encoder(Protocol):
    def begin(self) -> bytes: ...

    def batch(self, batch: pa.RecordBatch, first: bool) -> bytes:
        """The bytes of `batch`; `first`: no batch was sent before it. No state changes: the stream may
        encode a batch, find it would pass the byte limit, and encode a part of it instead."""
        ...

    def end(self, rows: int, truncated_by: str | None, error: str | None) -> bytes: ...


def _json_default(value: Any) -> Any:
    """JSON for what DuckDB hands over that `json` does not know (times are UTC, like the API's)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.isoformat() + "Z"
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):  # HUGEINT sums are DECIMAL(38, 0) in Arrow: integers stay integers
        if not value.is_finite():
            return None
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if hasattr(value, "months") and hasattr(value, "nanoseconds"):  # INTERVAL (pyarrow MonthDayNano)
        return {"months": value.months, "days": value.days, "seconds": value.nanoseconds / 1e9}
    return str(value)


def _finite(column: pa.Array) -> pa.Array:
    """NaN and infinities become null: JSON has no literal for them."""
    if pa.types.is_floating(column.type):
        return pc.if_else(pc.is_finite(column), column, pa.scalar(None, column.type))
    return column


def _parse_json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class JsonEncoder:
    """`{"columns": [{"name", "type"}], "rows": [[...], ...], "row_count", "truncated", "truncated_by", "error"}`.

    Values of DuckDB JSON columns (`attributes`, `events`, ...) are embedded as JSON, not as strings.
    """

    def __init__(self, columns: list[str], types: list[str]) -> None:
        self.columns = columns
        self.types = types

    def begin(self) -> bytes:
        head = [{"name": n, "type": t} for n, t in zip(self.columns, self.types, strict=True)]
        return b'{"columns": ' + json.dumps(head).encode() + b', "rows": ['

    def batch(self, batch: pa.RecordBatch, first: bool) -> bytes:
        values = []
        for i, column in enumerate(batch.columns):
            items = _finite(column).to_pylist()
            if self.types[i] == "JSON":
                items = [_parse_json(v) for v in items]
            values.append(items)
        rows = list(zip(*values, strict=True)) if values else [() for _ in range(batch.num_rows)]
        text = json.dumps(rows, default=_json_default, ensure_ascii=False, allow_nan=False)[1:-1]
        if not text:
            return b""
        return text.encode() if first else b", " + text.encode()

    def end(self, rows: int, truncated_by: str | None, error: str | None) -> bytes:
        tail = {"row_count": rows, "truncated": truncated_by is not None, "truncated_by": truncated_by, "error": error}
        return b"], " + json.dumps(tail)[1:].encode()


def _csv_safe(column: pa.Array) -> pa.Array:
    """Arrow's CSV writer takes flat values only: nested values and intervals become JSON text."""
    t = column.type
    if pa.types.is_nested(t) or pa.types.is_interval(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array(
            [None if v is None else json.dumps(v, default=_json_default) for v in column.to_pylist()], pa.string()
        )
    return column


class CsvEncoder:
    """RFC 4180 CSV with a header row; nested values (lists, structs) as JSON text."""

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns

    def begin(self) -> bytes:
        return b""

    def batch(self, batch: pa.RecordBatch, first: bool) -> bytes:
        flat = pa.RecordBatch.from_arrays([_csv_safe(c) for c in batch.columns], names=self.columns)
        sink = io.BytesIO()
        pacsv.write_csv(flat, sink, pacsv.WriteOptions(include_header=first))
        return sink.getvalue()

    def end(self, rows: int, truncated_by: str | None, error: str | None) -> bytes:
        return _csv_header(self.columns) if rows == 0 else b""  # no row: still say which columns there were


def _csv_header(columns: list[str]) -> bytes:
    sink = io.BytesIO()
    empty = pa.RecordBatch.from_arrays([pa.array([], pa.string()) for _ in columns], names=columns)
    pacsv.write_csv(empty, sink, pacsv.WriteOptions(include_header=True))
    return sink.getvalue()


class ArrowEncoder:
    """The Arrow IPC stream format (`pyarrow.ipc.open_stream`, `polars.read_ipc_stream`, ...): the schema
    message, one encapsulated message per batch, the end-of-stream marker."""

    END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def begin(self) -> bytes:
        return self.schema.serialize().to_pybytes()

    def batch(self, batch: pa.RecordBatch, first: bool) -> bytes:
        return batch.serialize().to_pybytes()

    def end(self, rows: int, truncated_by: str | None, error: str | None) -> bytes:
        # an answer cut by an error has no end-of-stream marker: a reader can tell it is incomplete
        return self.END_OF_STREAM if error is None else b""


def encoder_for(fmt: str, columns: list[str], types: list[str], schema: pa.Schema) -> Encoder:
    if fmt == "csv":
        return CsvEncoder(columns)
    if fmt == "arrow":
        return ArrowEncoder(schema)
    return JsonEncoder(columns, types)
