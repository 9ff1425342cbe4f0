"""ClickHouse form of `ingest.queries.diff`: the step and tool spans of one run with the few content
attributes a step-aligned diff compares, as text (DuckDB's `json_extract_string`: the filter
compiler's ClickHouse JSON expression). The trace is a range of the spans table's ordering key;
the run's span extent narrows it as in DuckDB.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.filters.dialect import ClickHouseDialect
from ingest.queries.filters import Where
from ingest.store.clickhouse.queries._common import SPANS, dicts
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

__all__ = ["step_spans"]


def _text(*keys: str) -> tuple[str, list[object]]:
    """The first present of `keys` as text (one key: that attribute)."""
    parts: list[str] = []
    params: list[object] = []
    for key in keys:
        sql, p = ClickHouseDialect().attribute_text("attributes", key)
        parts.append(sql)
        params += p
    return (parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"), params


_COLUMNS = (
    ("action", (c.STEP_ACTION,)),
    ("step_kind", (c.STEP_KIND,)),
    ("observation", (c.STEP_OBSERVATION,)),
    ("arguments", (c.GEN_AI_TOOL_CALL_ARGUMENTS, c.OI_INPUT_VALUE, c.TRACELOOP_ENTITY_INPUT)),
    ("result", (c.GEN_AI_TOOL_CALL_RESULT, c.OI_OUTPUT_VALUE, c.TRACELOOP_ENTITY_OUTPUT)),
)


def step_spans(
    cur: Any, trace_id: str, project: str, start: datetime | None, end: datetime | None
) -> list[dict[str, Any]]:
    """Step and tool spans of one trace, oldest first, with their diffable attributes as text."""
    where = Where()
    if start is not None and end is not None:
        where.add("start_time BETWEEN ? AND ?", start, end)
    where.add("project = ?", project)
    where.add("trace_id = ?", trace_id)
    where.add("operation IN (?, ?)", Op.STEP.value, Op.TOOL.value)
    picked: list[str] = []
    params: list[object] = []
    for name, keys in _COLUMNS:
        sql, p = _text(*keys)
        picked.append(f"{sql} AS {name}")
        params += p
    cur.execute(
        f"SELECT span_id, parent_span_id, operation, name, step_index, start_time, tool_name, status, error_type, "
        f"{', '.join(picked)} FROM {SPANS} WHERE {where.sql()} ORDER BY start_time, span_id",
        [*params, *where.params],
    )
    return dicts(cur)
