"""ClickHouse form of `ingest.queries.models`: per-model LLM call latency percentiles from spans.

Percentiles use `quantileExactInclusive` (DuckDB's `quantile_cont`), NULL when no call has a
value. An LLM span with an LLM span directly under it is a wrapper and is not counted
(`LEFT ANTI JOIN`, DuckDB's ANTI JOIN).
"""

from __future__ import annotations

from typing import Any

from ingest.store.clickhouse.queries._common import dicts, null_if_empty
from ingest.store.clickhouse.queries.run_scope import scoped_from
from tracer.conventions import OperationClass

__all__ = ["model_rows"]

_LLM = OperationClass.LLM.value


def _q(column: str, level: float) -> str:
    return null_if_empty(f"quantileExactInclusive({level})({column})", column)


def model_rows(cur: Any, filters: Any) -> list[dict[str, Any]]:
    """One row per model of the LLM calls of the runs in scope, most calls first."""
    scope, params = scoped_from("spans", "s", filters)
    sql = f"""
WITH calls AS (
    SELECT s.project AS project, s.trace_id AS trace_id, s.span_id AS span_id, s.parent_span_id AS parent_span_id,
        s.model AS model, s.status AS status, s.error_type AS error_type, s.duration_ms AS duration_ms,
        s.time_to_first_chunk_ms AS time_to_first_chunk_ms, s.stream AS stream, s.input_tokens AS input_tokens,
        s.output_tokens AS output_tokens, s.reasoning_tokens AS reasoning_tokens,
        s.cache_read_tokens AS cache_read_tokens, s.cache_creation_tokens AS cache_creation_tokens
    {scope} AND s.operation = ?
)
SELECT c.model AS model,
    count() AS llm_calls,
    countIf(c.status = 'ERROR' OR c.error_type IS NOT NULL) AS errors,
    {_q("c.duration_ms", 0.5)} AS duration_p50_ms,
    {_q("c.duration_ms", 0.95)} AS duration_p95_ms,
    count(c.time_to_first_chunk_ms) AS ttfc_calls,
    {_q("c.time_to_first_chunk_ms", 0.5)} AS ttfc_p50_ms,
    {_q("c.time_to_first_chunk_ms", 0.95)} AS ttfc_p95_ms,
    countIf(c.stream) AS streamed_calls,
    toInt64(ifNull(sum(c.input_tokens), 0)) AS input_tokens,
    toInt64(ifNull(sum(c.output_tokens), 0)) AS output_tokens,
    toInt64(ifNull(sum(c.reasoning_tokens), 0)) AS reasoning_tokens,
    toInt64(ifNull(sum(c.cache_read_tokens), 0)) AS cache_read_tokens,
    toInt64(ifNull(sum(c.cache_creation_tokens), 0)) AS cache_creation_tokens
FROM calls AS c LEFT ANTI JOIN (SELECT project, trace_id, parent_span_id FROM calls WHERE parent_span_id IS NOT NULL) AS inner_call
    ON inner_call.project = c.project AND inner_call.trace_id = c.trace_id AND inner_call.parent_span_id = c.span_id
GROUP BY c.model
ORDER BY llm_calls DESC, model NULLS LAST
"""
    cur.execute(sql, [*params, _LLM])
    rows = dicts(cur)
    for r in rows:
        for k in ("llm_calls", "errors", "ttfc_calls", "streamed_calls"):
            r[k] = int(r[k])
    return rows
