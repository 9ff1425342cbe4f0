"""`GET /api/budget-advice`: per agent, limits suggested by its history and what its current ones cut.

Why P95 x 1.5: a limit is a guard against runaway runs, not a target; at the 95th percentile of
what the agent really used, with half again as headroom, almost every healthy run fits, and a run
that needs more than that has usually lost its way (design.md §4 "Budget advice"). Integer limits
(steps, tokens) are rounded up. "Current" is the limit the agent's latest run span recorded
(`steplens.budget.*`); for a limit it did not record, the request's parameter of the same name.
"""

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import CommonParams
from ingest.queries.budget_advice import QUANTITIES
from ingest.store.backend import queries_of

PERCENTILE = 0.95
HEADROOM = 1.5


class BudgetAdviceParams(CommonParams):
    """Filters of the history, and the limits to judge where the agent's run spans recorded none."""

    max_steps: int | None = Field(None, ge=0, le=2**31 - 1)
    max_input_tokens: int | None = Field(None, ge=0, le=2**62)
    max_output_tokens: int | None = Field(None, ge=0, le=2**62)
    max_cost_usd: float | None = Field(None, ge=0)
    max_seconds: float | None = Field(None, ge=0)


class LimitAdvice(BaseModel):
    limit: str = Field(description="The kernel Budget field: max_steps, max_input_tokens, max_output_tokens, "
                       "max_cost_usd, max_seconds.")
    measured_runs: int = Field(description="Runs with a value for this quantity.")
    p95: float | None = Field(description="95th percentile of the quantity over those runs (limit units).")
    suggested: float | None = Field(description="p95 x 1.5 (rounded up for steps and tokens); null without data.")
    current: float | None = Field(description="The limit judged: recorded by the latest run span, else the parameter.")
    current_source: Literal["recorded", "parameter"] | None = None
    would_cut: int | None = Field(None, description="Runs whose quantity is over the current limit.")
    stopped_by: int | None = Field(None, description=(
        "Runs that ended on this limit's stop reason (max_steps, token_budget, cost_budget, timeout): already cut."))


class AgentBudgetAdvice(BaseModel):
    agent: str | None
    runs: int
    limits: list[LimitAdvice]


class BudgetAdvice(BaseModel):
    generated_at: datetime
    percentile: float = PERCENTILE
    headroom: float = HEADROOM
    agents: list[AgentBudgetAdvice] = Field(description="Most runs first.")


def suggest(p95: float | None, integer: bool) -> float | None:
    """The suggested limit for a P95 (see module docstring)."""
    if p95 is None:
        return None
    value = p95 * HEADROOM
    return float(math.ceil(value - 1e-9)) if integer else value


def add_budget_advice_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/budget-advice", response_model=BudgetAdvice, summary="Suggested limits per agent from its history")
    def get_budget_advice(
        params: Annotated[BudgetAdviceParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> BudgetAdvice:
        filters = params.to_filters(access)
        asked = {q.limit: getattr(params, q.limit) for q in QUANTITIES if getattr(params, q.limit) is not None}

        def query(cur: Any) -> list[AgentBudgetAdvice]:
            out = []
            for history in queries_of(store).budget_advice.histories(cur, filters):
                recorded = queries_of(store).budget_advice.recorded_limits(cur, history.latest)
                current = {**{k: float(v) for k, v in asked.items()}, **recorded}
                counted = queries_of(store).budget_advice.cuts(cur, filters, history.agent, current)
                limits = []
                for q in QUANTITIES:
                    over, stopped = counted.get(q.limit, (None, None))
                    source = "recorded" if q.limit in recorded else "parameter" if q.limit in asked else None
                    limits.append(LimitAdvice(
                        limit=q.limit, measured_runs=history.measured[q.limit], p95=history.p95[q.limit],
                        suggested=suggest(history.p95[q.limit], q.integer), current=current.get(q.limit),
                        current_source=source, would_cut=over, stopped_by=stopped,
                    ))  # fmt: skip
                out.append(AgentBudgetAdvice(agent=history.agent, runs=history.runs, limits=limits))
            return out

        agents = run_read(store, query, timeout_s)
        return BudgetAdvice(generated_at=datetime.now(UTC), agents=agents)
