"""Load-time replanning analytics: the `plan_spans` rows (ingest/schema.py) of the batch's traces.

Why at load time: `GET /api/replanning` needs each replan span's attributes and the usage of the LLM
calls under it. Parsing attributes JSON and joining chat spans to their parents at query time would
scan the spans table (10M rows); here it is done only for the few plan/replan spans a batch touches.

Why a row is recomputed, not patched: a chat span and its replan span may arrive in either order and
in different batches. A row is a pure function of the stored plan/replan span and its chat children,
so every batch that brings one of them recomputes that row from `spans` (bounded by the spans' time
window, so zone maps skip the rest). Runs inside the loader's transaction, on the writer thread.
"""

from __future__ import annotations

from datetime import timedelta

import duckdb

from ingest.schema import PLAN_SPAN_COLUMNS, PLAN_SPAN_USAGE
from tracer.conventions import OperationClass as Op

# Children start and end inside their parent; the margin only absorbs timestamp rounding.
MARGIN = timedelta(seconds=1)

_PARAMS = {"plan": Op.PLAN.value, "replan": Op.REPLAN.value, "llm": Op.LLM.value}

# plan/replan spans of the batch, plus stored rows that got a new chat child in this batch
# (a parent ends after its child, so rows that ended before the batch's first chat cannot match).
_TARGETS = """
SELECT project, trace_id, span_id, start_time, end_time FROM new_spans WHERE operation IN ($plan, $replan)
UNION
SELECT p.project, p.trace_id, p.span_id, p.start_time, p.end_time
FROM plan_spans p SEMI JOIN (
    SELECT project, trace_id, parent_span_id FROM new_spans WHERE operation = $llm AND parent_span_id IS NOT NULL
) n ON p.project = n.project AND p.trace_id = n.trace_id AND p.span_id = n.parent_span_id
WHERE p.end_time >= (SELECT min(end_time) FROM new_spans WHERE operation = $llm) - $margin
"""

# The extent of the targets; (NULL, NULL) when the batch touches no plan_spans row (the usual case:
# most batches hold no plan-and-execute spans), which skips the rest.
_WINDOW = f"SELECT min(start_time), max(end_time) FROM ({_TARGETS})"

_ROWS = f"""
CREATE OR REPLACE TEMP TABLE new_plan_spans AS
WITH plan_targets AS ({_TARGETS}),
s AS (
    SELECT sp.* FROM spans sp
    SEMI JOIN plan_targets t ON sp.project = t.project AND sp.trace_id = t.trace_id AND sp.span_id = t.span_id
    WHERE sp.start_time BETWEEN $lo AND $hi AND sp.trace_id IN (SELECT trace_id FROM plan_targets)
),
u AS (
    SELECT {PLAN_SPAN_USAGE}
    FROM spans l
    SEMI JOIN plan_targets t ON l.project = t.project AND l.trace_id = t.trace_id AND l.parent_span_id = t.span_id
    WHERE l.operation = $llm AND l.start_time BETWEEN $lo AND $hi
      AND l.trace_id IN (SELECT trace_id FROM plan_targets)
    GROUP BY l.project, l.trace_id, l.parent_span_id
)
SELECT {PLAN_SPAN_COLUMNS}
FROM s LEFT JOIN u ON u.project = s.project AND u.trace_id = s.trace_id AND u.span_id = s.span_id
"""

# Every target is a stored plan/replan span, so new_plan_spans holds one row per target.
_REPLACE = [
    """
    DELETE FROM plan_spans USING new_plan_spans t
    WHERE plan_spans.project = t.project AND plan_spans.trace_id = t.trace_id AND plan_spans.span_id = t.span_id
      AND plan_spans.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO plan_spans BY NAME SELECT * FROM new_plan_spans;DROP TABLE new_plan_spans",
]


def maintain(conn: duckdb.DuckDBPyConnection) -> None:
    """Recompute the plan_spans rows touched by the batch in `new_spans` (already inserted into spans)."""
    targets = {**_PARAMS, "margin": MARGIN}
    lo, hi = conn.execute(_WINDOW, targets).fetchall()[0]
    if lo is None or hi is None:
        return
    window = {"lo": lo - MARGIN, "hi": hi + MARGIN}
    conn.execute(_ROWS, {**targets, **window})
    delete, insert = _REPLACE
    conn.execute(delete, window)
    conn.execute(insert)
