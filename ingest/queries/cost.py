"""Cost attribution: LLM usage and cost totals grouped by one dimension.

Run-level dimensions (agent, version, project, user, conversation, day) group the runs table;
model and provider group `run_models` (one row per run and model, kept at load time) so no query
scans the spans table. Grouping by tool is the per-tool three-part cost (ingest/queries/tools.py).
"""

from __future__ import annotations

from typing import Any, Literal

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where
from ingest.queries.run_scope import facts_from

GroupBy = Literal["model", "provider", "tool", "agent", "version", "project", "user", "conversation", "day"]
EXAMPLE_CANDIDATES = 12

# Key expressions: the only SQL that depends on the caller's choice, picked from this table.
RUN_KEYS: dict[str, str] = {
    "agent": "agent",
    "version": "version",
    "project": "project",
    "user": "user_id",
    "conversation": "conversation_id",
    "day": "strftime(start_time, '%Y-%m-%d')",
}
MODEL_KEYS: dict[str, str] = {"model": "m.model", "provider": "m.provider"}


def cost_rows(cur: duckdb.DuckDBPyConnection, filters: CommonFilters, group_by: str) -> list[dict[str, Any]]:
    """Rows of {key, runs, llm_calls, input_tokens, output_tokens, cost_usd, example_candidates},
    most expensive first. `group_by` must be a run or model key (tool is handled by the caller)."""
    if group_by in RUN_KEYS:
        where = runs_common_where(filters)
        sql = f"""
            SELECT {RUN_KEYS[group_by]} AS key, count(*) AS runs,
                coalesce(sum(llm_calls), 0) AS llm_calls,
                coalesce(sum(input_tokens), 0) AS input_tokens,
                coalesce(sum(output_tokens), 0) AS output_tokens,
                coalesce(sum(cost_usd), 0.0) AS cost_usd,
                max_by(trace_id, coalesce(cost_usd, 0.0), {EXAMPLE_CANDIDATES}) AS example_candidates
            FROM runs WHERE {where.sql()}
            GROUP BY key ORDER BY cost_usd DESC, key NULLS LAST
        """
        params = where.params
    elif group_by in MODEL_KEYS:
        scope, params = facts_from("run_models", "m", filters)
        sql = f"""
            SELECT {MODEL_KEYS[group_by]} AS key, count(DISTINCT m.trace_id) AS runs,
                coalesce(sum(m.llm_calls), 0) AS llm_calls,
                coalesce(sum(m.input_tokens), 0) AS input_tokens,
                coalesce(sum(m.output_tokens), 0) AS output_tokens,
                coalesce(sum(m.cost_usd), 0.0) AS cost_usd,
                max_by(m.trace_id, coalesce(m.cost_usd, 0.0), {EXAMPLE_CANDIDATES}) AS example_candidates
            {scope}
            GROUP BY key ORDER BY cost_usd DESC, key NULLS LAST
        """
    else:
        raise ValueError(f"cost_rows cannot group by {group_by!r}")
    cur.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
