"""Per-tool statistics and the three-part tool cost, over the load-time `tool_calls`/`tool_carry` rows.

The cost parts (docs/analytics.md): direct = the tool span's own cost; decision = the tool's share
of the LLM call(s) that chose it; carry = its observation tokens times the number of later LLM
calls of the run, priced at each model's input price. Carry is returned here as resent tokens per
(tool, model); the API prices them with the price table, so a price update applies to history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from ingest.queries.filters import CommonFilters
from ingest.queries.run_scope import facts_from
from tracer.conventions import ToolDecision, ToolErrorCode

EXAMPLE_CANDIDATES = 12  # trace ids fetched per tool; deduplicated to a few examples by the caller
UNNAMED = "(unnamed)"  # a tool span whose client gave no tool name

_STATS = """
SELECT coalesce(t.tool_name, ?) AS tool,
    count(*) AS calls,
    count(DISTINCT t.trace_id) AS runs,
    count(*) FILTER (WHERE t.is_error) AS errors,
    histogram(coalesce(t.error_type, 'error')) FILTER (WHERE t.is_error) AS errors_by_type,
    count(*) FILTER (WHERE t.error_type = ?) AS timeouts,
    count(*) FILTER (WHERE t.decision = ? OR t.error_type = ?) AS denials,
    quantile_cont(t.duration_ms, 0.5) AS p50_ms,
    quantile_cont(t.duration_ms, 0.95) AS p95_ms,
    count(*) FILTER (WHERE t.truncated) AS truncated_calls,
    coalesce(sum(t.dropped_tokens), 0) AS dropped_tokens,
    coalesce(sum(t.observation_tokens), 0) AS observation_tokens,
    count(*) FILTER (WHERE t.observation_source = 'estimate') AS estimated_observations,
    coalesce(sum(t.direct_cost_usd), 0.0) AS direct,
    coalesce(sum(t.decision_cost_usd), 0.0) AS decision,
    coalesce(sum(t.decision_llm_calls), 0.0) AS decision_llm_calls,
    coalesce(sum(t.decision_input_tokens), 0.0) AS decision_input_tokens,
    coalesce(sum(t.decision_output_tokens), 0.0) AS decision_output_tokens,
    max_by(t.trace_id, (t.is_error::BIGINT << 60) + epoch_us(t.start_time), {examples}) AS example_candidates
{scope}
GROUP BY tool
"""

_CARRY = """
SELECT coalesce(c.tool_name, ?) AS tool, c.model, sum(c.resent_tokens) AS resent_tokens
{scope}
GROUP BY tool, c.model
"""


@dataclass(frozen=True)
class ToolRows:
    stats: list[dict[str, Any]]
    errors_by_type: dict[str, dict[str, int]]
    carry_tokens: dict[str, dict[str, int]]  # tool -> model ('' when unknown) -> resent tokens


def tool_rows(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> ToolRows:
    scope, params = facts_from("tool_calls", "t", filters)
    cur.execute(
        _STATS.format(scope=scope, examples=EXAMPLE_CANDIDATES),
        [UNNAMED, ToolErrorCode.TIMEOUT.value, ToolDecision.DENIED.value, ToolErrorCode.DENIED.value, *params],
    )
    names = [d[0] for d in cur.description]
    stats = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    errors = {s["tool"]: {str(k): int(v) for k, v in (s.pop("errors_by_type") or {}).items()} for s in stats}

    carry_scope, carry_params = facts_from("tool_carry", "c", filters)
    cur.execute(_CARRY.format(scope=carry_scope), [UNNAMED, *carry_params])
    carry: dict[str, dict[str, int]] = {}
    for tool, model, tokens in cur.fetchall():
        carry.setdefault(tool, {})[model] = int(tokens or 0)
    return ToolRows(stats, errors, carry)
