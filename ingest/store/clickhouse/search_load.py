"""Writing search documents to ClickHouse: the load path's part of full-text search (design.md §4).

Exactly once, like spans: the load inserts a load batch's documents BEFORE its spans, with their
own `insert_deduplication_token` (the spans' token plus `:search_docs`), for the same spans the
spans insert adds (the anti-join's new ones). A crash between the two inserts replays the record:
its spans are still new, so the same documents go again under the same token and ClickHouse drops
them; a crash after both finds the spans stored and sends nothing. So a stored span is always
searchable and its documents are stored once; two nodes racing collapse on the ReplacingMergeTree
key (project, trace_id, span_id, field). The documents are the DuckDB store's, made by the same code
(`ingest.search.index.span_docs`, over `ingest/search/content.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import pyarrow as pa

from ingest.clock import utcnow
from ingest.search.index import Doc, span_docs
from ingest.store.clickhouse.schema_search import DOC_COLUMNS, SEARCH_DOCS
from ingest.store.clickhouse.transport import Transport

CONTENT_COLUMNS = ("project", "trace_id", "span_id", "start_time", "status_message", "attributes", "events")


def _values(rows: pa.Table, name: str) -> list:
    column = rows.column(name)
    if isinstance(column.type, pa.ExtensionType):  # arrow.json: its text
        column = pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
    return column.to_pylist()


def content_rows(rows: pa.Table) -> Iterable[tuple]:
    """(project, trace_id, span_id, start_time, status_message, attributes, events) of each span."""
    return zip(*(_values(rows, name) for name in CONTENT_COLUMNS), strict=True)


def docs_of(rows: Iterable[tuple]) -> list[Doc]:
    out: list[Doc] = []
    for project, trace_id, span_id, start, status_message, attributes, events in rows:
        if start is not None and getattr(start, "tzinfo", None) is not None:
            start = start.replace(tzinfo=None)
        out.extend(span_docs(project, trace_id, span_id, start, status_message, attributes, events))
    return out


def docs_table(docs: list[Doc], indexed_at: datetime) -> pa.Table:
    return pa.table({
        "project": pa.array([d.project for d in docs], pa.string()),
        "trace_id": pa.array([d.trace_id for d in docs], pa.string()),
        "span_id": pa.array([d.span_id for d in docs], pa.string()),
        "field": pa.array([d.field for d in docs], pa.string()),
        "start_time": pa.array([d.start_time for d in docs], pa.timestamp("us")),
        "text": pa.array([d.text for d in docs], pa.string()),
        "indexed_at": pa.array([indexed_at] * len(docs), pa.timestamp("us")),
    }).select(list(DOC_COLUMNS))  # fmt: skip


def insert_docs(transport: Transport, database: str, docs: list[Doc], token: str | None) -> int:
    """One (deduplicated, with `token`) insert of `docs`; returns how many were sent."""
    if not docs:
        return 0
    settings = {"insert_deduplication_token": token} if token else None
    transport.insert_arrow(f"`{database}`.`{SEARCH_DOCS.name}`", docs_table(docs, utcnow()), settings)
    return len(docs)


def load_docs(transport: Transport, database: str, spans: pa.Table, span_token: str) -> int:
    """The documents of `spans` (the record's spans not stored yet), before the spans themselves."""
    if not spans.num_rows:
        return 0
    return insert_docs(transport, database, docs_of(content_rows(spans)), f"{span_token}:search_docs")
