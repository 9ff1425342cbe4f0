"""What a plan-and-execute run returns: a `RunResult` plus the plan's own story.

A run stopped by a breaker is `ok=False` with stop reason `replan_exhausted`, but what it did
achieve is not thrown away: the completed results, every plan version and the lessons are here,
so a caller can resume by hand or a dashboard can show why replanning did not converge.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kernel.plan.model import Plan
from kernel.plan.signals import FailureSignal
from kernel.plan.variables import VariableHealth
from kernel.types import RunResult
from tracer.conventions import ReplanVerdict


class CompletedResult(BaseModel):
    step_id: str
    tool: str
    action: str
    version: int
    output: str
    health: VariableHealth
    health_reason: str | None = None
    cost_usd: float = 0.0


class ReplanRecord(BaseModel):
    """One replan call (or one refused before the call). `verdict` None: the reply was unusable
    (`format_error` says why) and the replanner was asked again."""

    from_version: int
    to_version: int | None = None
    granularity: str
    cause: str
    failed_step: str | None = None
    verdict: ReplanVerdict | None = None
    detail: str | None = None
    format_error: str | None = None
    kept: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    estimated_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reexecution_cost_usd: float | None = None
    # What the replanner was given and the gates looked at (also on the replan span):
    route_rule: str | None = None  # the granularity the router's rules gave
    escalated: bool = False  # raised above the rule because the same failure came back
    escalation_reset: bool = False  # a goal change cleared the router's escalation memory first
    lessons: list[str] = Field(default_factory=list)
    variables: dict[str, int] = Field(default_factory=dict)  # results per health (clean, stale, void)
    tool_calls: int = 0  # tool calls since the last plan


class BreakerTrip(BaseModel):
    verdict: ReplanVerdict
    detail: str
    failed_step: str | None = None


class PlanRunResult(RunResult):
    plan_versions: list[Plan] = Field(default_factory=list)
    replans: list[ReplanRecord] = Field(default_factory=list)
    completed: list[CompletedResult] = Field(default_factory=list)
    failures: list[FailureSignal] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)
    trip: BreakerTrip | None = None
    missing_evidence: list[str] = Field(default_factory=list)
    goal_changes: list[str] = Field(default_factory=list)
    # What global replans threw away: the cost of the results they made stale or void, i.e. the
    # work the new plan pays again if it redoes it. Invisible in per-call costs, hence recorded.
    reexecution_cost_usd: float = 0.0
    format_errors: list[str] = Field(default_factory=list)

    @classmethod
    def from_json(cls, data: str | bytes) -> PlanRunResult:
        return cls.model_validate_json(data)

    def result_of(self, step_id: str) -> Any:
        return next((c for c in self.completed if c.step_id == step_id), None)
