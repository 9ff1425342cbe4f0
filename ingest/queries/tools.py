"""Per-tool statistics and the three-part tool cost, over the load-time `tool_calls`/`tool_carry` rows.

The cost parts (docs/analytics.md): direct = the tool span's own cost; decision = the tool's share
of the LLM call(s) that chose it; carry = its observation tokens times the number of later LLM
calls of the run, priced at each model's input price. Carry is returned here as resent tokens per
(tool, model); the API prices them with the price table, so a price update applies to history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause
from ingest.queries.run_scope import facts_from
from ingest.schema import TOOL_ROLLUP_NUMBERS, tool_rollup_rows

EXAMPLE_CANDIDATES = 12  # trace ids fetched per tool; deduplicated to a few examples by the caller
UNNAMED = "(unnamed)"  # a tool span whose client gave no tool name
HOUR = timedelta(hours=1)

_SUMS = ", ".join(f"sum({n}) AS {n}" for n in TOOL_ROLLUP_NUMBERS)

# Rollup cells of the whole hours in range, plus the partial edge hours aggregated from tool_calls /
# tool_carry into the same shape (tool_rollup_rows), summed per tool and part.
_ROLLUP = """
WITH cells AS (
    SELECT * FROM tool_rollup r WHERE {cells}
    UNION ALL BY NAME
    SELECT * FROM ({edges})
)
SELECT coalesce(tool_name, ?) AS tool, part, part_key, {sums},
    max_by(example_trace, example_key, {examples}) AS example_candidates
FROM cells GROUP BY tool, part, part_key
"""

# Latency percentiles are exact, over the tool calls in range (zone maps on start_time skip the rest).
_LATENCY = """
SELECT coalesce(t.tool_name, ?) AS tool, quantile_cont(t.duration_ms, [0.5, 0.95]) AS q
{scope}
GROUP BY tool
"""


@dataclass(frozen=True)
class ToolRows:
    stats: list[dict[str, Any]]
    errors_by_type: dict[str, dict[str, int]]
    carry_tokens: dict[str, dict[str, int]]  # tool -> model ('' when unknown) -> resent tokens


def _hour_ceil(ts: datetime) -> datetime:
    floor = ts.replace(minute=0, second=0, microsecond=0)
    return floor if floor == ts else floor + HOUR


def _split(filters: CommonFilters) -> tuple[datetime | None, datetime | None]:
    """The whole hours [lo, hi) served by the rollup (None: unbounded); (x, x) when there are none."""
    lo = None if filters.since is None else _hour_ceil(filters.since)
    hi = None if filters.until is None else filters.until.replace(minute=0, second=0, microsecond=0)
    if lo is not None and hi is not None and hi < lo:
        hi = lo
    return lo, hi


def _cell_where(filters: CommonFilters, lo: datetime | None, hi: datetime | None) -> Where:
    where = Where()
    project_clause(where, filters.projects, column="r.project")
    if lo is not None:
        where.add("r.start_time >= ?", lo)
    if hi is not None:
        where.add("r.start_time < ?", hi)
    for column, value in (("agent", filters.agent), ("version", filters.version), ("environment", filters.environment)):
        if value is not None:
            where.add(f"r.{column} = ?", value)
    mode_clause(where, filters.modes, column="r.mode")
    return where


def _edges(filters: CommonFilters, lo: datetime | None, hi: datetime | None) -> tuple[str, list[object]]:
    """tool_rollup_rows over the calls of runs starting in range but outside [lo, hi)."""
    parts: list[tuple[str, list[object]]] = []
    for table, alias in (("tool_calls", "t"), ("tool_carry", "c")):
        scope, params = facts_from(table, alias, filters)
        outside = []
        if lo is not None:
            outside.append(f"{alias}.run_start < ?")
            params.append(lo)
        if hi is not None:
            outside.append(f"{alias}.run_start >= ?")
            params.append(hi)
        condition = " OR ".join(outside) if outside else "FALSE"
        parts.append((f"SELECT {alias}.*, 1 AS sign {scope} AND ({condition})", params))
    (calls, calls_params), (carry, carry_params) = parts
    return tool_rollup_rows(calls, carry), [*calls_params, *carry_params]


def tool_rows(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> ToolRows:
    lo, hi = _split(filters)
    cells = _cell_where(filters, lo, hi)
    edges, edge_params = _edges(filters, lo, hi)
    sql = _ROLLUP.format(cells=cells.sql(), edges=edges, sums=_SUMS, examples=EXAMPLE_CANDIDATES)
    cur.execute(sql, [*cells.params, *edge_params, UNNAMED])
    names = [d[0] for d in cur.description]
    stats: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, int]] = {}
    carry: dict[str, dict[str, int]] = {}
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        tool, part, key = r["tool"], r["part"], r["part_key"]
        if part == "error" and r["value"]:
            errors.setdefault(tool, {})[key] = int(r["value"])
        elif part == "carry" and r["value"]:
            carry.setdefault(tool, {})[key] = int(r["value"])
        elif part == "calls" and r["entries"]:
            stats[tool] = {
                "tool": tool,
                "calls": int(r["entries"]),
                **{n: int(r[n]) for n in _COUNTS},
                **{n: float(r[n]) for n in _AMOUNTS},
                "example_candidates": r["example_candidates"],
                "p50_ms": None,
                "p95_ms": None,
            }
    scope, params = facts_from("tool_calls", "t", filters)
    cur.execute(_LATENCY.format(scope=scope), [UNNAMED, *params])
    for tool, q in cur.fetchall():
        if tool in stats and q is not None:
            stats[tool]["p50_ms"], stats[tool]["p95_ms"] = q
    for tool in stats:
        errors.setdefault(tool, {})
    return ToolRows(list(stats.values()), errors, carry)


_COUNTS = (
    "runs", "errors", "timeouts", "denials", "truncated_calls", "dropped_tokens", "observation_tokens",
    "estimated_observations",
)  # fmt: skip
_AMOUNTS = ("direct", "decision", "decision_llm_calls", "decision_input_tokens", "decision_output_tokens")
