"""The dashboards' view of `GET /api/budget-advice` (kept apart from ingest's models like the others,
design.md §1): per agent, the suggested limits and what the current ones cut."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LimitAdvice(_Model):
    limit: str = ""
    measured_runs: int = 0
    p95: float | None = None
    suggested: float | None = None
    current: float | None = None
    current_source: str | None = None
    would_cut: int | None = None
    stopped_by: int | None = None


class AgentBudgetAdvice(_Model):
    agent: str | None = None
    runs: int = 0
    limits: list[LimitAdvice] = Field(default_factory=list)


class BudgetAdvice(_Model):
    generated_at: datetime | None = None
    percentile: float = 0.95
    headroom: float = 1.5
    agents: list[AgentBudgetAdvice] = Field(default_factory=list)


def advice_rows(advice: BudgetAdvice) -> list[dict[str, object]]:
    """One table row per agent and limit: what the Overview's budget advice panel shows."""
    return [
        {"agent": a.agent, "limit": x.limit, "runs measured": x.measured_runs, "p95": x.p95,
         "suggested": x.suggested, "current": x.current, "current from": x.current_source,
         "runs it would cut": x.would_cut, "runs it ended": x.stopped_by}
        for a in advice.agents for x in a.limits if x.measured_runs
    ]  # fmt: skip
