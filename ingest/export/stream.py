"""An export as a stream of bytes: pages read one short read at a time, encoded as they come.

Why a page is read per `store.read()`: see ingest/export/tables.py. A page that fails to read (the
store went away, the time limit cut it) raises out of the stream, so the HTTP answer ends without its
final chunk and the client sees a broken transfer, never a short file that looks complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest.export.formats import Format, encoder_for
from ingest.export.otlp import OTLP_COLUMNS
from ingest.export.tables import SPANS, Position, TableSpec
from ingest.store.work import work_of

PAGE_ROWS = 5000


@dataclass(frozen=True)
class ExportRequest:
    table: TableSpec
    fmt: Format
    projects: frozenset[str] | None  # what the caller may read, narrowed by `project`
    since: datetime | None
    until: datetime | None


@dataclass(frozen=True)
class Prepared:
    """What is known before the first byte is sent: the columns and how many rows there are now."""

    request: ExportRequest
    columns: list[tuple[str, str]]
    rows: int


def prepare(cur: Any, request: ExportRequest, store: object = None) -> Prepared:
    """Read the columns and the row count with the read cursor `cur` (of `store`: whose SQL; DuckDB's if None)."""
    tables = work_of(store).export_tables
    if request.fmt is Format.OTLP:
        if request.table is not SPANS:
            raise ValueError("OTLP exports spans only")
        columns = [(c, "") for c in OTLP_COLUMNS]
    else:
        columns = tables.exported_columns(cur, request.table)
    rows = tables.count_rows(cur, request.table, request.projects, request.since, request.until)
    return Prepared(request, columns, rows)


def chunks(store: Any, prepared: Prepared, page_rows: int = PAGE_ROWS) -> Iterator[bytes]:
    """The encoded export, page by page, until a page comes back short."""
    req = prepared.request
    tables = work_of(store).export_tables
    names = [name for name, _ in prepared.columns]
    encoder = encoder_for(req.fmt, frozenset(name for name, kind in prepared.columns if kind == "JSON"))
    after: Position | None = None
    while True:
        with store.read() as cur:
            page, after_page = tables.read_page(cur, req.table, names, req.projects, req.since, req.until, after, page_rows)
        data = encoder.page(page)
        if data:
            yield data
        if after_page is None or page.num_rows < page_rows:
            break
        after = after_page
    tail = encoder.end()
    if tail:
        yield tail
