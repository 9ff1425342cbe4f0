"""Replanning analytics upkeep: the `plan_spans` rows (ingest/schema.py) of the traces a pass touches.

Why precomputed: `GET /api/replanning` needs each replan span's attributes and the usage of the LLM
calls under it. Parsing attributes JSON and joining chat spans to their parents at query time would
scan the spans table (10M rows); here it is done only for the plan/replan spans of touched traces.

Why a trace's rows are recomputed, not patched: a chat span and its replan span may arrive in either
order and in different batches. A row is a pure function of the stored plan/replan span and its
chat children, so the upkeep pass (ingest/store/upkeep.py) recomputes the rows of every touched
trace that has plan/replan spans from `trace_spans`, the pass's one read of those traces' spans;
only traces that already had rows (`stale`) get theirs deleted first.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ingest.schema import PLAN_SPAN_COLUMNS, PLAN_SPAN_USAGE
from tracer.conventions import OperationClass as Op

_PARAMS = {"plan": Op.PLAN.value, "replan": Op.REPLAN.value, "llm": Op.LLM.value}

_ROWS = f"""
CREATE OR REPLACE TEMP TABLE new_plan_spans AS
WITH s AS (SELECT * FROM trace_spans WHERE operation IN ($plan, $replan)),
u AS (
    SELECT {PLAN_SPAN_USAGE}
    FROM trace_spans l
    SEMI JOIN s ON l.project = s.project AND l.trace_id = s.trace_id AND l.parent_span_id = s.span_id
    WHERE l.operation = $llm
    GROUP BY l.project, l.trace_id, l.parent_span_id
)
SELECT {PLAN_SPAN_COLUMNS}
FROM s LEFT JOIN u ON u.project = s.project AND u.trace_id = s.trace_id AND u.span_id = s.span_id
"""

_REPLACE = [
    """
    DELETE FROM plan_spans USING stale t
    WHERE plan_spans.project = t.project AND plan_spans.trace_id = t.trace_id
      AND plan_spans.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO plan_spans BY NAME SELECT * FROM new_plan_spans;DROP TABLE new_plan_spans",
]


def maintain(conn: duckdb.DuckDBPyConnection, stale_window: dict[str, Any] | None, plan_spans: int) -> None:
    """Recompute the plan_spans rows of the traces in `touched` from `trace_spans` (`plan_spans`: how
    many plan/replan spans it holds; none means the traces have no rows to write). `stale_window`
    bounds the rows the `stale` traces already have (None: no stale trace, nothing to delete)."""
    if not plan_spans:
        return
    conn.execute(_ROWS, _PARAMS)
    delete, insert = _REPLACE
    if stale_window is not None:
        conn.execute(delete, stale_window)
    conn.execute(insert)
