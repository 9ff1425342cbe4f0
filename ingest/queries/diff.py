"""The step-level facts of one run (action, arguments, observation) for a step-aligned diff.

Only step and tool spans are read, within the run's span extent (runs.span_start/span_end: the
min start and max end of every span stored for the trace, so the window cannot miss one), and
only the few content attributes a diff compares are pulled out of the JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from ingest.queries.filters import Where
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

_PATHS = {
    "action": f'$."{c.STEP_ACTION}"',
    "step_kind": f'$."{c.STEP_KIND}"',
    "observation": f'$."{c.STEP_OBSERVATION}"',
    "arguments": f'$."{c.GEN_AI_TOOL_CALL_ARGUMENTS}"',
    "result": f'$."{c.GEN_AI_TOOL_CALL_RESULT}"',
    "oi_input": f'$."{c.OI_INPUT_VALUE}"',
    "oi_output": f'$."{c.OI_OUTPUT_VALUE}"',
    "tl_input": f'$."{c.TRACELOOP_ENTITY_INPUT}"',
    "tl_output": f'$."{c.TRACELOOP_ENTITY_OUTPUT}"',
}


def step_spans(
    cur: duckdb.DuckDBPyConnection,
    trace_id: str,
    project: str,
    start: datetime | None,
    end: datetime | None,
) -> list[dict[str, Any]]:
    """Step and tool spans of one trace, oldest first, with their diffable attributes as text."""
    where = Where()
    if start is not None and end is not None:
        where.add("start_time BETWEEN ? AND ?", start, end)
    where.add("project = ?", project)
    where.add("trace_id = ?", trace_id)
    where.add("operation IN (?, ?)", Op.STEP.value, Op.TOOL.value)
    p = _PATHS
    cur.execute(
        f"""
        SELECT span_id, parent_span_id, operation, name, step_index, start_time, tool_name, status,
            error_type,
            json_extract_string(attributes, ?) AS action,
            json_extract_string(attributes, ?) AS step_kind,
            json_extract_string(attributes, ?) AS observation,
            coalesce(json_extract_string(attributes, ?), json_extract_string(attributes, ?),
                json_extract_string(attributes, ?)) AS arguments,
            coalesce(json_extract_string(attributes, ?), json_extract_string(attributes, ?),
                json_extract_string(attributes, ?)) AS result
        FROM spans WHERE {where.sql()}
        ORDER BY start_time, span_id
        """,
        [
            p["action"], p["step_kind"], p["observation"],
            p["arguments"], p["oi_input"], p["tl_input"],
            p["result"], p["oi_output"], p["tl_output"],
            *where.params,
        ],
    )  # fmt: skip
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
