"""Log records of one trace (GenAI events, evaluation results), for the trace endpoint.

Why by (project, trace_id) at read time: records are stored as they arrive, before or after their
spans (ingest/store/logs_load.py); joining them here gives the same answer whatever the order.
The log_records table has no index on trace_id (like spans, see ingest/schema.py): the BIGINT
`trace_key` (the id's first 15 hex digits, as trace_index keeps it) is compared first, which reads
one integer column instead of comparing every row's 32-char string (3-4x faster at 2M records).
"""

from __future__ import annotations

from typing import Any

import duckdb

from ingest.schema import trace_key_sql

LOG_COLUMNS = (
    "span_id",
    "time",
    "observed_time",
    "event_name",
    "severity_number",
    "severity_text",
    "body",
    "attributes",
    "scope",
    "service",
    "eval_name",
    "eval_score_value",
    "eval_score_label",
    "eval_explanation",
)
_SELECT = ", ".join(LOG_COLUMNS)


def trace_logs(cur: duckdb.DuckDBPyConnection, trace_id: str, project: str) -> list[dict[str, Any]]:
    """Every stored log record of the trace, oldest first (ties in a stable order)."""
    cur.execute(
        f"SELECT {_SELECT} FROM log_records WHERE trace_key = {trace_key_sql('?')} AND project = ? AND trace_id = ? "
        "ORDER BY time, record_key",
        [trace_id, project, trace_id],
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
