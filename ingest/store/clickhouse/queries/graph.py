"""ClickHouse form of `ingest.queries.graph`: the newest runs in scope and the spans of each, which
ingest/api/graph_build.py walks into the agent graph (the same walk for both stores).

The spans of the sampled runs are found by the spans table's ordering key (project, trace_id), so
the time window DuckDB needs to skip row groups only narrows the read here; it is kept so both
stores read exactly the same spans.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.filters.compile import Sql
from ingest.queries.filters import CommonFilters
from ingest.queries.graph import GRAPH_RUN_COLUMNS, GRAPH_SPAN_COLUMNS
from ingest.queries.traces import WINDOW_SLACK
from ingest.store.clickhouse.queries._common import RUNS, SPANS, dicts, runs_common_where

__all__ = ["GRAPH_RUN_COLUMNS", "GRAPH_SPAN_COLUMNS", "graph_runs", "graph_spans"]


def graph_runs(
    cur: Any, filters: CommonFilters, max_runs: int, extra: Sql | None = None
) -> tuple[list[dict[str, Any]], int, datetime | None, datetime | None]:
    """(the newest `max_runs` runs in scope, how many runs are in scope, their spans' time extent)."""
    where = runs_common_where(filters)
    if extra is not None:
        where.add(extra.sql, *extra.params)
    cur.execute(
        f"SELECT {', '.join(GRAPH_RUN_COLUMNS)}, coalesce(span_start, start_time) AS lo, "
        f"coalesce(span_end, end_time, start_time) AS hi FROM {RUNS} WHERE {where.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id DESC, project DESC LIMIT ?",
        [*where.params, max_runs],
    )
    runs = dicts(cur)
    cur.execute(f"SELECT count() FROM {RUNS} WHERE {where.sql()}", where.params)
    total = cur.fetchone()
    los = [r["lo"] for r in runs if r["lo"] is not None]
    his = [r["hi"] for r in runs if r["hi"] is not None]
    return runs, int(total[0]) if total else 0, min(los) if los else None, max(his) if his else None


def graph_spans(
    cur: Any, runs: list[dict[str, Any]], lo: datetime | None, hi: datetime | None
) -> list[dict[str, Any]]:
    """The spans of `runs` (rows of `graph_runs`), keyed by their run's project and trace id."""
    if not runs or lo is None or hi is None:
        return []
    cur.execute(
        f"""
        SELECT project, {', '.join(GRAPH_SPAN_COLUMNS)} FROM {SPANS}
        WHERE (project, trace_id) IN (SELECT arrayJoin(arrayZip(?, ?)))
          AND start_time >= ? AND start_time <= ?
        """,
        [[r["project"] for r in runs], [r["trace_id"] for r in runs], lo - WINDOW_SLACK, hi + WINDOW_SLACK],
    )
    return dicts(cur)
