"""Typed view of `GET /api/replanning` as the Replanning page reads it.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks the page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ReplanGroup(_Model):
    key: str | None = None
    replans: int = 0
    admitted: int = 0
    refused: int = 0
    unusable: int = 0
    runs: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    llm_cost_usd: float = 0.0
    reexecution_cost_usd: float = 0.0
    examples: list[str] = Field(default_factory=list)


class TripRow(_Model):
    verdict: str = ""
    trips: int = 0
    runs: int = 0
    examples: list[str] = Field(default_factory=list)


class Exhausted(_Model):
    runs: int = 0
    examples: list[str] = Field(default_factory=list)
    without_replan_span: int = 0
    without_replan_span_examples: list[str] = Field(default_factory=list)


class VersionsRow(_Model):
    versions: int = 0
    runs: int = 0
    examples: list[str] = Field(default_factory=list)


class ReplanCost(_Model):
    replan_llm_calls: int = 0
    replan_input_tokens: int = 0
    replan_output_tokens: int = 0
    replan_cost_usd: float = 0.0
    plan_cost_usd: float = 0.0
    reexecution_cost_usd: float = 0.0
    runs_cost_usd: float = 0.0
    replan_share: float | None = None
    reexecution_share: float | None = None
    examples: list[str] = Field(default_factory=list)


class RunReplanCost(_Model):
    trace_id: str
    agent: str | None = None
    version: str | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    start_time: datetime | None = None
    versions: int = 0
    replans: int = 0
    replan_cost_usd: float = 0.0
    reexecution_cost_usd: float = 0.0
    run_cost_usd: float | None = None


class RouteRow(_Model):
    rule: str | None = None
    granularity: str | None = None
    replans: int = 0
    escalated: int = 0
    escalation_resets: int = 0
    examples: list[str] = Field(default_factory=list)


class ReplanSteps(_Model):
    kept: int = 0
    dropped: int = 0
    added: int = 0
    stale_results: int = 0
    void_results: int = 0


class ReplanDetail(_Model):
    trace_id: str
    start_time: datetime | None = None
    agent: str | None = None
    version: str | None = None
    from_version: int | None = None
    to_version: int | None = None
    granularity: str | None = None
    route_rule: str | None = None
    route_escalated: bool | None = None
    escalation_reset: bool | None = None
    cause: str | None = None
    failed_step: str | None = None
    verdict: str | None = None
    refusal: str | None = None
    kept: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)
    variables_clean: int | None = None
    variables_stale: int | None = None
    variables_void: int | None = None
    tool_calls: int | None = None
    budget_used_tokens: int | None = None


class Replanning(_Model):
    plan_runs: int = 0
    runs_with_replans: int = 0
    replans: int = 0
    admitted: int = 0
    refused: int = 0
    unusable: int = 0
    oscillations: int = 0
    oscillation_examples: list[str] = Field(default_factory=list)
    by_granularity: list[ReplanGroup] = Field(default_factory=list)
    by_cause: list[ReplanGroup] = Field(default_factory=list)
    trips: list[TripRow] = Field(default_factory=list)
    exhausted: Exhausted = Field(default_factory=Exhausted)
    versions: list[VersionsRow] = Field(default_factory=list)
    cost: ReplanCost = Field(default_factory=ReplanCost)
    runs: list[RunReplanCost] = Field(default_factory=list)
    routes: list[RouteRow] = Field(default_factory=list)
    steps: ReplanSteps = Field(default_factory=ReplanSteps)
    recent_replans: list[ReplanDetail] = Field(default_factory=list)
