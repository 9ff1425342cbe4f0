"""ClickHouse form of `ingest.queries.cost`: LLM usage and cost totals grouped by one dimension,
run-level keys over runs, model/provider over run_models (both read `FINAL`).

DuckDB's `max_by(trace_id, cost, 12)` (the 12 most expensive runs' ids) is the (cost, trace id)
pairs sorted descending and cut to 12.
"""

from __future__ import annotations

from typing import Any

from ingest.queries.cost import EXAMPLE_CANDIDATES, MODEL_KEYS, GroupBy
from ingest.queries.filters import CommonFilters
from ingest.store.clickhouse.queries._common import RUNS, dicts, runs_common_where
from ingest.store.clickhouse.queries.run_scope import facts_from

__all__ = ["GroupBy", "MODEL_KEYS", "RUN_KEYS", "cost_rows"]

RUN_KEYS: dict[str, str] = {
    "agent": "agent",
    "version": "version",
    "project": "project",
    "user": "user_id",
    "conversation": "conversation_id",
    "day": "formatDateTime(start_time, '%Y-%m-%d')",
}


def _examples(trace: str, cost: str) -> str:
    return (f"arrayMap(x -> x.2, arraySlice(arrayReverseSort(groupArray((ifNull({cost}, 0.0), {trace}))), "
            f"1, {EXAMPLE_CANDIDATES}))")


def cost_rows(cur: Any, filters: CommonFilters, group_by: str) -> list[dict[str, Any]]:
    """Rows of {key, runs, llm_calls, input_tokens, output_tokens, cost_usd, example_candidates},
    most expensive first. `group_by` must be a run or model key (tool is handled by the caller)."""
    if group_by in RUN_KEYS:
        where = runs_common_where(filters)
        sql = f"""
            SELECT {RUN_KEYS[group_by]} AS key, count() AS runs,
                toInt64(ifNull(sum(llm_calls), 0)) AS llm_calls,
                toInt64(ifNull(sum(input_tokens), 0)) AS input_tokens,
                toInt64(ifNull(sum(output_tokens), 0)) AS output_tokens,
                toFloat64(ifNull(sum(cost_usd), 0.0)) AS total_cost,
                {_examples("trace_id", "cost_usd")} AS example_candidates
            FROM {RUNS} WHERE {where.sql()}
            GROUP BY key ORDER BY total_cost DESC, key NULLS LAST
        """
        params = where.params
    elif group_by in MODEL_KEYS:
        scope, params = facts_from("run_models", "m", filters)
        sql = f"""
            SELECT {MODEL_KEYS[group_by]} AS key, count(DISTINCT m.trace_id) AS runs,
                toInt64(ifNull(sum(m.llm_calls), 0)) AS llm_calls,
                toInt64(ifNull(sum(m.input_tokens), 0)) AS input_tokens,
                toInt64(ifNull(sum(m.output_tokens), 0)) AS output_tokens,
                toFloat64(ifNull(sum(m.cost_usd), 0.0)) AS total_cost,
                {_examples("m.trace_id", "m.cost_usd")} AS example_candidates
            {scope}
            GROUP BY key ORDER BY total_cost DESC, key NULLS LAST
        """
    else:
        raise ValueError(f"cost_rows cannot group by {group_by!r}")
    cur.execute(sql, params)
    rows = dicts(cur)
    out = []
    for r in rows:  # `total_cost`: an alias `cost_usd` would shadow the column inside the examples' expression
        r["runs"] = int(r["runs"])
        out.append({("cost_usd" if k == "total_cost" else k): v for k, v in r.items()})
    return out
