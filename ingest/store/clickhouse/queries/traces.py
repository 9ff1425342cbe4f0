"""ClickHouse form of `ingest.queries.traces`: every span of one trace.

Why no time window here: the spans table is ordered by (project, trace_id, span_id), so a trace is
a range read of the primary key whatever the table's size; DuckDB's run-window and span-count
check exist only because its table has no such key. Read `FINAL`, so a retried span is one row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.traces import SPAN_COLUMNS, SPAN_SELECT, TraceSpans
from ingest.store.clickhouse.queries._common import SPANS, dicts

__all__ = ["SPAN_COLUMNS", "TraceSpans", "trace_spans"]


def trace_spans(
    cur: Any,
    trace_id: str,
    project: str,
    start: datetime | None,
    end: datetime | None,
    expected_spans: int | None,
) -> TraceSpans:
    """Spans of one trace of one project in (start_time, span_id) order. `start`, `end` and
    `expected_spans` are accepted for the shared signature; the key lookup needs none of them, so
    `used_window` is always False."""
    cur.execute(
        f"SELECT {SPAN_SELECT} FROM {SPANS} WHERE project = ? AND trace_id = ? ORDER BY start_time, span_id",
        [project, trace_id],
    )
    return TraceSpans(rows=dicts(cur), used_window=False)
