"""Joining full-text hits (ingest/search) with the stored spans: the span's facts, and a filter on them.

Why through DuckDB and not straight from the index: the spans table is the truth. A hit whose span
retention has deleted is dropped here, and an optional filter expression narrows the hits with the same
meaning as on /api/spans.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from ingest.filters.compile import Sql
from ingest.search import pending
from ingest.search.index import Hit

_FACTS = (
    "s.project, s.trace_id, s.span_id, s.name, s.operation, s.agent_name, s.tool_name, s.model, s.status, "
    "s.error_type, s.start_time, s.duration_ms"
)


def span_facts(cur: duckdb.DuckDBPyConnection, hits: list[Hit], predicate: Sql | None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(project, trace_id, span_id) -> the span's facts, for the hits whose span is stored and matches."""
    if not hits:
        return {}
    table = pa.table({
        "project": [h.project for h in hits], "trace_id": [h.trace_id for h in hits],
        "span_id": [h.span_id for h in hits],
    })  # fmt: skip
    first: datetime = min(h.start_time for h in hits)
    last: datetime = max(h.start_time for h in hits)
    cur.register("search_result_keys", table)
    try:
        extra, params = ("", []) if predicate is None else (f" AND ({predicate.sql})", predicate.params)
        cur.execute(
            f"SELECT {_FACTS} FROM spans s SEMI JOIN search_result_keys k ON k.project = s.project "
            f"AND k.trace_id = s.trace_id AND k.span_id = s.span_id WHERE s.start_time BETWEEN ? AND ?{extra}",
            [first, last, *params],
        )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        cur.unregister("search_result_keys")
    return {(r["project"], r["trace_id"], r["span_id"]): r for r in rows}


def lag(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None) -> tuple[int, datetime | None]:
    """(spans waiting for the index, queued time of the oldest) among readable projects."""
    return pending.lag(cur, projects)
