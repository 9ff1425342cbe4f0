"""`GET /api/tools`: per-tool call stats and the three-part tool cost (docs/analytics.md)."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ingest.api.access import ReadAccess
from ingest.api.analytics_models import ToolCost, Tools, ToolStats
from ingest.api.analytics_params import ToolsParams
from ingest.api.examples import pick_examples
from ingest.api.execute import ReadableStore, run_read
from ingest.api.pricing import price_carry, price_table_info
from ingest.queries.tools import ToolRows
from ingest.store.backend import queries_of
from tracer.pricing import PriceTable


def tool_stats(rows: ToolRows, prices: PriceTable) -> list[ToolStats]:
    """API rows from the query rows, carry priced; most expensive tool first."""
    out = []
    for s in rows.stats:
        carry = price_carry(prices, rows.carry_tokens.get(s["tool"], {}))
        direct, decision = float(s["direct"]), float(s["decision"])
        calls = int(s["calls"])
        out.append(
            ToolStats(
                tool=s["tool"],
                calls=calls,
                errors=int(s["errors"]),
                error_rate=s["errors"] / calls if calls else 0.0,
                errors_by_type=rows.errors_by_type.get(s["tool"], {}),
                timeouts=int(s["timeouts"]),
                denials=int(s["denials"]),
                p50_ms=s["p50_ms"],
                p95_ms=s["p95_ms"],
                truncation_rate=s["truncated_calls"] / calls if calls else 0.0,
                dropped_tokens=int(s["dropped_tokens"]),
                cost=ToolCost(direct=direct, decision=decision, carry=carry.usd, total=direct + decision + carry.usd),
                examples=pick_examples(s["example_candidates"]),
                runs=int(s["runs"]),
                observation_tokens=int(s["observation_tokens"]),
                estimated_observations=int(s["estimated_observations"]),
                carry_tokens=carry.tokens,
                unpriced_carry_tokens=carry.unpriced_tokens,
                decision_llm_calls=float(s["decision_llm_calls"]),
            )
        )
    out.sort(key=lambda t: (-t.cost.total, -t.calls, t.tool or ""))
    return out


def add_tool_routes(
    router: APIRouter,
    store: ReadableStore,
    read_access: Callable[..., Any],
    timeout_s: float | None,
    prices: PriceTable,
) -> None:
    @router.get("/tools", response_model=Tools, summary="Per-tool stats and cost (direct, decision, carry)")
    def get_tools(params: Annotated[ToolsParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]) -> Tools:
        filters = params.to_filters(access)
        rows = run_read(store, lambda cur: queries_of(store).tools.tool_rows(cur, filters), timeout_s)
        return Tools(tools=tool_stats(rows, prices), price_table=price_table_info(prices))
