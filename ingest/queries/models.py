"""Per-model LLM call latency: duration and time to first chunk percentiles (GET /api/models).

Why from `spans` and not a rollup: percentiles do not add up across runs or hours, so they are
computed exactly from the LLM spans in scope (operation = 'llm', grouped by the request model like
/api/cost?group_by=model). The run filters select the runs as everywhere else (`scoped_from`);
with a `since` the spans' own start bound lets DuckDB skip older row groups. An LLM span with an
LLM span directly under it is a wrapper of that call (LlamaIndex's outer `astream_chat`, pydantic-ai's
`chat` around Logfire's OpenAI span) and is not counted: the inner span made the request.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ingest.queries.run_scope import scoped_from
from tracer.conventions import OperationClass

_LLM = OperationClass.LLM.value


def model_rows(cur: duckdb.DuckDBPyConnection, filters: Any) -> list[dict[str, Any]]:
    """One row per model of the LLM calls of the runs in scope, most calls first."""
    scope, params = scoped_from("spans", "s", filters)
    sql = f"""
WITH calls AS (
    SELECT s.project, s.trace_id, s.span_id, s.parent_span_id, s.model, s.status, s.error_type, s.duration_ms,
        s.time_to_first_chunk_ms, s.stream, s.input_tokens, s.output_tokens, s.reasoning_tokens,
        s.cache_read_tokens, s.cache_creation_tokens
    {scope} AND s.operation = ?
)
SELECT s.model AS model,
    count(*) AS llm_calls,
    count(*) FILTER (WHERE s.status = 'ERROR' OR s.error_type IS NOT NULL) AS errors,
    quantile_cont(s.duration_ms, 0.5) AS duration_p50_ms,
    quantile_cont(s.duration_ms, 0.95) AS duration_p95_ms,
    count(s.time_to_first_chunk_ms) AS ttfc_calls,
    quantile_cont(s.time_to_first_chunk_ms, 0.5) AS ttfc_p50_ms,
    quantile_cont(s.time_to_first_chunk_ms, 0.95) AS ttfc_p95_ms,
    count(*) FILTER (WHERE s.stream) AS streamed_calls,
    coalesce(sum(s.input_tokens), 0) AS input_tokens,
    coalesce(sum(s.output_tokens), 0) AS output_tokens,
    coalesce(sum(s.reasoning_tokens), 0) AS reasoning_tokens,
    coalesce(sum(s.cache_read_tokens), 0) AS cache_read_tokens,
    coalesce(sum(s.cache_creation_tokens), 0) AS cache_creation_tokens
FROM calls s ANTI JOIN calls inner_call
    ON inner_call.project = s.project AND inner_call.trace_id = s.trace_id AND inner_call.parent_span_id = s.span_id
GROUP BY s.model
ORDER BY llm_calls DESC, model NULLS LAST
"""
    result = cur.execute(sql, [*params, _LLM])
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]
