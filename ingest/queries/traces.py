"""Fetching every span of one trace, fast even when the spans table holds millions of rows.

The spans table has no index on trace_id (see ingest/schema.py), so a bare `trace_id = ?` scans
everything. The run row tells when the trace happened; restricting on start_time first lets
DuckDB skip row groups by their zonemaps, and the trace_id filter runs on what is left. The run's
`span_count` verifies the window caught every span (late, skewed or detached spans can fall
outside it); when it did not, the query falls back to a full scan rather than return a partial
trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb

from ingest.queries.filters import Where

# Tolerance around the run's [start, end] for client clock skew between processes of one trace.
WINDOW_SLACK = timedelta(minutes=5)

SPAN_COLUMNS = (
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "operation",
    "start_time",
    "end_time",
    "duration_ms",
    "status",
    "status_message",
    "model",
    "response_model",
    "provider",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cost_usd",
    "tool_name",
    "error_type",
    "step_index",
    "service",
    "scope",
    "attributes",
    "events",
    "resource",
)
SPAN_SELECT = ", ".join(SPAN_COLUMNS)


@dataclass(frozen=True)
class TraceSpans:
    rows: list[dict[str, Any]]
    used_window: bool  # False when the full-scan fallback ran (visible for tests and benchmarks)


def _fetch(cur: duckdb.DuckDBPyConnection, where: Where) -> list[dict[str, Any]]:
    cur.execute(f"SELECT {SPAN_SELECT} FROM spans WHERE {where.sql()} ORDER BY start_time, span_id", where.params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def trace_spans(
    cur: duckdb.DuckDBPyConnection,
    trace_id: str,
    project: str,
    start: datetime | None,
    end: datetime | None,
    expected_spans: int | None,
) -> TraceSpans:
    """Spans of one trace of one project, using the run's time window when it is known.

    Pass the run's span extent (runs.span_start/span_end: min start and max end of every span seen)
    when the store keeps it, else the root's start/end. The exact window is tried first: with the
    extent it holds every span, and its rows are all the read costs (the JSON columns of a
    WINDOW_SLACK-padded window cost 2-3x more at 10M spans). When it comes up short of
    `expected_spans` (root times of a skewed trace, a span ending before it starts), the padded
    window, then the full scan. Without `expected_spans` only the padded window is tried.
    """
    if start is not None and end is not None:
        # without a count to check against, only the padded window (a miss would go unnoticed)
        for slack in (timedelta(0), WINDOW_SLACK) if expected_spans is not None else (WINDOW_SLACK,):
            where = Where()
            where.add("start_time >= ?", start - slack)
            where.add("start_time <= ?", end + slack)
            where.add("project = ?", project)
            where.add("trace_id = ?", trace_id)
            rows = _fetch(cur, where)
            if expected_spans is None or len(rows) >= expected_spans:
                return TraceSpans(rows=rows, used_window=True)
    where = Where()
    where.add("project = ?", project)
    where.add("trace_id = ?", trace_id)
    return TraceSpans(rows=_fetch(cur, where), used_window=False)
