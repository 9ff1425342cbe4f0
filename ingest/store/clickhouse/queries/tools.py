"""ClickHouse form of `ingest.queries.tools`: per-tool statistics and the three-part tool cost.

Why straight from `tool_calls`/`tool_carry` (read `FINAL`) and not an hourly rollup as in DuckDB:
DuckDB's rollup exists to avoid scanning millions of call rows per request on one machine;
ClickHouse aggregates those columns at scan speed, and a rollup kept current under late spans
would need its own revisioning. The figures are the same sums: money in Decimal(38, 12) as the
rollup keeps it, latency percentiles with `quantileExactInclusive` (DuckDB's `quantile_cont`).
Example candidates are the latest failing calls' traces first, then the latest calls'.
"""

from __future__ import annotations

from typing import Any

from ingest.queries.filters import CommonFilters
from ingest.queries.tools import _AMOUNTS, _COUNTS, EXAMPLE_CANDIDATES, UNNAMED, ToolRows
from ingest.store.clickhouse.queries.run_scope import facts_from
from tracer.conventions import ToolDecision, ToolErrorCode

__all__ = ["EXAMPLE_CANDIDATES", "UNNAMED", "ToolRows", "tool_rows"]

_DEC = "Decimal(38, 12)"

_CALLS = f"""
SELECT coalesce(t.tool_name, ?) AS tool, count() AS entries, uniqExact(t.project, t.trace_id) AS runs,
    countIf(t.is_error) AS errors,
    countIf(t.error_type = '{ToolErrorCode.TIMEOUT.value}') AS timeouts,
    countIf(t.decision = '{ToolDecision.DENIED.value}' OR t.error_type = '{ToolErrorCode.DENIED.value}') AS denials,
    countIf(t.truncated) AS truncated_calls,
    toInt64(ifNull(sum(t.dropped_tokens), 0)) AS dropped_tokens,
    toInt64(ifNull(sum(t.observation_tokens), 0)) AS observation_tokens,
    countIf(t.observation_source = 'estimate') AS estimated_observations,
    sum(CAST(ifNull(t.direct_cost_usd, 0), '{_DEC}')) AS direct,
    sum(CAST(ifNull(t.decision_cost_usd, 0), '{_DEC}')) AS decision,
    sum(CAST(ifNull(t.decision_llm_calls, 0), '{_DEC}')) AS decision_llm_calls,
    sum(CAST(ifNull(t.decision_input_tokens, 0), '{_DEC}')) AS decision_input_tokens,
    sum(CAST(ifNull(t.decision_output_tokens, 0), '{_DEC}')) AS decision_output_tokens,
    arrayDistinct(arrayMap(x -> x.2, arrayReverseSort(groupArray(
        (bitShiftLeft(toInt64(t.is_error), 60) + toUnixTimestamp64Micro(t.start_time), t.trace_id))))) AS examples,
    count(t.duration_ms) AS timed,
    quantileExactInclusive(0.5)(t.duration_ms) AS p50,
    quantileExactInclusive(0.95)(t.duration_ms) AS p95
{{scope}}
GROUP BY tool
"""

_ERRORS = """
SELECT coalesce(t.tool_name, ?) AS tool, coalesce(t.error_type, 'error') AS kind, count() AS n
{scope} AND t.is_error
GROUP BY tool, kind
"""

_CARRY = """
SELECT coalesce(c.tool_name, ?) AS tool, c.model AS model, toInt64(sum(c.resent_tokens)) AS tokens
{scope}
GROUP BY tool, model
"""


def tool_rows(cur: Any, filters: CommonFilters) -> ToolRows:
    """Per-tool stats, errors by type and resent (carry) tokens per model of the runs in scope."""
    scope, params = facts_from("tool_calls", "t", filters)
    cur.execute(_CALLS.format(scope=scope), [UNNAMED, *params])
    names = [d[0] for d in cur.description]
    stats: dict[str, dict[str, Any]] = {}
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        if not r["entries"]:
            continue
        timed = bool(r["timed"])
        stats[r["tool"]] = {
            "tool": r["tool"],
            "calls": int(r["entries"]),
            **{n: int(r[n]) for n in _COUNTS},
            **{n: float(r[n]) for n in _AMOUNTS},
            # one per trace, latest failing first: what the rollup's per-hour examples give a caller
            "example_candidates": r["examples"][:EXAMPLE_CANDIDATES],
            "p50_ms": r["p50"] if timed else None,
            "p95_ms": r["p95"] if timed else None,
        }
    errors: dict[str, dict[str, int]] = {}
    cur.execute(_ERRORS.format(scope=scope), [UNNAMED, *params])
    for tool, kind, n in cur.fetchall():
        if n:
            errors.setdefault(tool, {})[kind] = int(n)
    carry: dict[str, dict[str, int]] = {}
    carry_scope, carry_params = facts_from("tool_carry", "c", filters)
    cur.execute(_CARRY.format(scope=carry_scope), [UNNAMED, *carry_params])
    for tool, model, tokens in cur.fetchall():
        if tokens:
            carry.setdefault(tool, {})[model] = int(tokens)
    for tool in stats:
        errors.setdefault(tool, {})
    return ToolRows(list(stats.values()), errors, carry)
