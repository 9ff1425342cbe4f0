"""The export's byte encoders: each turns pages (Arrow tables) into chunks of one output file.

Why one encoder object per export: Parquet is one file with a footer written at the end, so the
encoder keeps its writer between pages; JSON lines and OTLP lines are stateless per page.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
from enum import StrEnum
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.export.otlp import export_request


class Format(StrEnum):
    PARQUET = "parquet"
    JSONL = "jsonl"
    OTLP = "otlp"


MEDIA_TYPES = {
    Format.PARQUET: "application/vnd.apache.parquet",
    Format.JSONL: "application/x-ndjson",
    Format.OTLP: "application/x-ndjson",
}
SUFFIXES = {Format.PARQUET: ".parquet", Format.JSONL: ".jsonl", Format.OTLP: ".otlp.jsonl"}


class Encoder(Protocol):
    def page(self, table: pa.Table) -> bytes: ...

    def end(self) -> bytes: ...


def _plain(value: Any) -> Any:
    """A value JSON can hold: UTC times as ISO 8601 with Z, non-finite doubles as null."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class JsonLines:
    """One JSON object per row; JSON columns (attributes, events, ...) inlined as objects."""

    def __init__(self, json_columns: frozenset[str]) -> None:
        self.json_columns = json_columns

    def page(self, table: pa.Table) -> bytes:
        out = []
        for row in table.to_pylist():
            for name in self.json_columns & row.keys():
                text = row[name]
                if isinstance(text, str):
                    with contextlib.suppress(ValueError):  # else kept as the stored text
                        row[name] = json.loads(text)
            out.append(json.dumps(_plain(row), ensure_ascii=False, separators=(",", ":")))
        return ("\n".join(out) + "\n").encode() if out else b""

    def end(self) -> bytes:
        return b""


class OtlpLines:
    """One OTLP/JSON `ExportTraceServiceRequest` per page of spans (ingest/export/otlp.py)."""

    def page(self, table: pa.Table) -> bytes:
        if table.num_rows == 0:
            return b""
        request = export_request(table.to_pylist())
        return (json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

    def end(self) -> bytes:
        return b""


class _Chunks:
    """A write-only file for pyarrow that hands over what was written so far (`take`) while keeping
    the absolute position Parquet's footer offsets are computed from."""

    closed = False

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._pos = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def take(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


class Parquet:
    """One Parquet file: a row group per page (zstd), the footer at the end."""

    def __init__(self) -> None:
        self._sink = _Chunks()
        self._writer: pq.ParquetWriter | None = None

    def page(self, table: pa.Table) -> bytes:
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._sink, table.schema, compression="zstd")
        if table.num_rows:
            self._writer.write_table(table)
        return self._sink.take()

    def end(self) -> bytes:
        if self._writer is not None:
            self._writer.close()
        return self._sink.take()


def encoder_for(fmt: Format, json_columns: frozenset[str]) -> Encoder:
    if fmt is Format.PARQUET:
        return Parquet()
    if fmt is Format.OTLP:
        return OtlpLines()
    return JsonLines(json_columns)
