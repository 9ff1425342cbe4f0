"""ClickHouse form of `ingest.queries.logs`: the log records of one trace (GenAI events,
evaluation results), read `FINAL` so a retried export is one record. The trace id is compared
directly: log_records has a bloom-filter index on it (DuckDB compares an integer trace_key first)."""

from __future__ import annotations

from typing import Any

from ingest.queries.logs import LOG_COLUMNS
from ingest.store.clickhouse.queries._common import LOG_RECORDS, dicts

__all__ = ["LOG_COLUMNS", "trace_logs"]

_SELECT = ", ".join(LOG_COLUMNS)


def trace_logs(cur: Any, trace_id: str, project: str) -> list[dict[str, Any]]:
    """Every stored log record of the trace, oldest first (ties by record key, as in DuckDB)."""
    cur.execute(
        f"SELECT {_SELECT} FROM {LOG_RECORDS} WHERE project = ? AND trace_id = ? ORDER BY time, record_key",
        [project, trace_id],
    )
    return dicts(cur)
