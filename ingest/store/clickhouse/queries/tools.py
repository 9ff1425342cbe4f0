"""ClickHouse form of `ingest.queries.tools`: per-tool statistics and the three-part tool cost.

Why straight from `tool_calls`/`tool_carry` (read `FINAL`) and not an hourly rollup as in DuckDB:
DuckDB's rollup exists to avoid scanning millions of call rows per request on one machine;
ClickHouse aggregates those columns at scan speed, and a rollup kept current under late spans
would need its own revisioning. The figures are the same sums: money in Decimal(38, 12) as the
rollup keeps it, latency percentiles with `quantileExactInclusive` (DuckDB's `quantile_cont`).
Example candidates are the latest failing calls' traces first, then the latest calls': each tool
keeps its best-ranked few calls in the same pass (`groupArraySorted`, not a sorted array of every
call), and only a tool whose kept calls are too few distinct traces is ranked over all its calls.
"""

from __future__ import annotations

from typing import Any

from ingest.queries.filters import CommonFilters
from ingest.queries.tools import _AMOUNTS, _COUNTS, EXAMPLE_CANDIDATES, UNNAMED, ToolRows
from ingest.store.clickhouse.queries.run_scope import facts_from
from tracer.conventions import ToolDecision, ToolErrorCode

__all__ = ["EXAMPLE_CANDIDATES", "UNNAMED", "ToolRows", "tool_rows"]

_DEC = "Decimal(38, 12)"

# A call's example rank: failing calls first, then the latest (is_error above every timestamp bit).
_EXAMPLE_KEY = "bitShiftLeft(toInt64(t.is_error), 60) + toUnixTimestamp64Micro(t.start_time)"
_TOP_CALLS = 4 * EXAMPLE_CANDIDATES  # best-ranked calls kept per tool in the one pass

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
    groupArraySorted({_TOP_CALLS})((-({_EXAMPLE_KEY}), t.trace_id)) AS top_calls,
    sumMapIf(map(coalesce(t.error_type, 'error'), toUInt64(1)), t.is_error) AS error_kinds,
    count(t.duration_ms) AS timed,
    quantilesExactInclusive(0.5, 0.95)(t.duration_ms) AS latency
{{scope}}
GROUP BY tool
"""

# The whole ranking, for a tool whose top keys hold too few distinct traces (one trace's calls at the top).
_ALL_EXAMPLES = f"""
SELECT coalesce(t.tool_name, ?) AS tool,
    arraySlice(arrayDistinct(arrayMap(x -> x.2, arrayReverseSort(groupArray(({_EXAMPLE_KEY}, t.trace_id))))),
        1, {EXAMPLE_CANDIDATES}) AS examples
{{scope}} AND has(?, tool)
GROUP BY tool
"""

_CARRY = """
SELECT coalesce(c.tool_name, ?) AS tool, c.model AS model, toInt64(sum(c.resent_tokens)) AS tokens
{scope}
GROUP BY tool, model
"""


def _examples(top_calls: list[Any]) -> list[str] | None:
    """The first EXAMPLE_CANDIDATES distinct trace ids of the tool's calls ranked by (example key,
    trace id) descending, from its `_TOP_CALLS` best calls (key negated, as groupArraySorted keeps
    the smallest); None when they cannot decide it. Every call ranked strictly above the kept
    calls' lowest key is among them, so their traces, in that order, start the whole ranking."""
    pairs = (tuple(c.values()) if isinstance(c, dict) else tuple(c) for c in top_calls)  # Arrow gives a struct as a dict
    ranked = sorted(((-negated, trace_id) for negated, trace_id in pairs), reverse=True)
    if len(ranked) < _TOP_CALLS:  # all of the tool's calls
        return list(dict.fromkeys(t for _, t in ranked))[:EXAMPLE_CANDIDATES]
    lowest = ranked[-1][0]
    above = list(dict.fromkeys(t for k, t in ranked if k > lowest))
    return above[:EXAMPLE_CANDIDATES] if len(above) >= EXAMPLE_CANDIDATES else None


def tool_rows(cur: Any, filters: CommonFilters) -> ToolRows:
    """Per-tool stats, errors by type and resent (carry) tokens per model of the runs in scope."""
    scope, params = facts_from("tool_calls", "t", filters)
    cur.execute(_CALLS.format(scope=scope), [UNNAMED, *params])
    names = [d[0] for d in cur.description]
    stats: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, int]] = {}  # errors by type, counted in the same pass
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        kinds = r["error_kinds"]
        for kind, n in kinds.items() if isinstance(kinds, dict) else kinds:  # Arrow gives a map as pairs
            if n:
                errors.setdefault(r["tool"], {})[kind] = int(n)
        if not r["entries"]:
            continue
        timed = bool(r["timed"])
        stats[r["tool"]] = {
            "tool": r["tool"],
            "calls": int(r["entries"]),
            **{n: int(r[n]) for n in _COUNTS},
            **{n: float(r[n]) for n in _AMOUNTS},
            # one per trace, latest failing first: what the rollup's per-hour examples give a caller
            "example_candidates": _examples(r["top_calls"]),
            "p50_ms": r["latency"][0] if timed else None,
            "p95_ms": r["latency"][1] if timed else None,
        }
    short = [tool for tool, s in stats.items() if s["example_candidates"] is None]
    if short:  # one trace's calls crowd the top: rank all of those tools' calls
        cur.execute(_ALL_EXAMPLES.format(scope=scope), [UNNAMED, *params, short])
        for tool, examples in cur.fetchall():
            stats[tool]["example_candidates"] = list(examples)
    carry: dict[str, dict[str, int]] = {}
    carry_scope, carry_params = facts_from("tool_carry", "c", filters)
    cur.execute(_CARRY.format(scope=carry_scope), [UNNAMED, *carry_params])
    for tool, model, tokens in cur.fetchall():
        if tokens:
            carry.setdefault(tool, {})[model] = int(tokens)
    for tool in stats:
        errors.setdefault(tool, {})
    return ToolRows(list(stats.values()), errors, carry)
