"""JSON shape of `GET /api/replanning` (plan-and-execute runs: how often and how much they replan).

Fields are added, never renamed: the dashboards' Replanning page reads them by name. Every row
carries example trace ids (newest first) so a number can always be opened as real runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ingest.api.models import _utc
from ingest.api.params import CommonParams


class ReplanningParams(CommonParams):
    """Filters of `GET /api/replanning` (the common ones)."""


class ReplanGroup(BaseModel):
    """Replan spans (attempts) sharing a granularity or a cause."""

    key: str | None = Field(description="The granularity (patch, tail, global) or the cause (error type).")
    replans: int = Field(description="Replan spans, whatever their verdict.")
    admitted: int
    refused: int = Field(description="Refused by a breaker, gate or the oscillation guard.")
    unusable: int = Field(description="No verdict: the replanner's reply was not a usable plan (format_error).")
    runs: int
    llm_calls: int = Field(description="Replanner LLM calls (chat spans under the replan spans).")
    input_tokens: int
    output_tokens: int
    llm_cost_usd: float
    reexecution_cost_usd: float = Field(description="Work thrown away by admitted (global) replans, USD.")
    examples: list[str] = Field(default_factory=list)


class TripRow(BaseModel):
    """Replans a breaker or gate refused, by verdict (step_breaker, total_breaker, token_gate, oscillation)."""

    verdict: str
    trips: int
    runs: int
    examples: list[str] = Field(default_factory=list)


class Exhausted(BaseModel):
    """Runs that ended with stop reason `replan_exhausted`."""

    runs: int
    examples: list[str] = Field(default_factory=list)
    without_replan_span: int = Field(
        description="Of those, runs whose breaker tripped before any replan call (no refused replan span), "
        "e.g. the same environmental failure repeating past the step breaker."
    )
    without_replan_span_examples: list[str] = Field(default_factory=list)


class VersionsRow(BaseModel):
    """How many plan versions runs adopted (1 = never replanned; 0 = no usable first plan)."""

    versions: int
    runs: int
    examples: list[str] = Field(default_factory=list)


class ReplanCost(BaseModel):
    """USD and tokens over the plan-and-execute runs in scope."""

    replan_llm_calls: int
    replan_input_tokens: int
    replan_output_tokens: int
    replan_cost_usd: float = Field(description="The replanner's own LLM calls.")
    plan_cost_usd: float = Field(description="The first planner's LLM calls.")
    reexecution_cost_usd: float = Field(description="Results a global replan discarded and paid for again.")
    runs_cost_usd: float = Field(description="Total cost of those runs (LLM and tool calls).")
    replan_share: float | None = Field(description="replan_cost_usd / runs_cost_usd (null when nothing cost).")
    reexecution_share: float | None = Field(description="reexecution_cost_usd / runs_cost_usd.")
    examples: list[str] = Field(default_factory=list, description="Runs whose replanning cost the most.")


class RunReplanCost(BaseModel):
    """One run's replanning cost next to its total: the runs that replanned most expensively."""

    trace_id: str
    project: str | None = None
    agent: str | None = None
    version: str | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    start_time: datetime | None = None
    versions: int
    replans: int
    replan_cost_usd: float
    reexecution_cost_usd: float
    run_cost_usd: float | None

    @field_validator("start_time", mode="before")
    @classmethod
    def _utc_time(cls, v: Any) -> Any:
        return _utc(v)


class RouteRow(BaseModel):
    """The granularity router's decisions: replans per (what the rules said, what was used)."""

    rule: str | None = Field(description="The granularity the router's rules gave (steplens.replan.route.rule).")
    granularity: str | None = Field(description="The granularity used.")
    replans: int
    escalated: int = Field(description="Raised above the rule because the same failure came back.")
    escalation_resets: int = Field(description="Replans after a goal change cleared the router's escalation memory.")
    examples: list[str] = Field(default_factory=list)


class ReplanSteps(BaseModel):
    """What admitted replans changed, and the health of the results they were given."""

    kept: int = Field(description="Steps carried into the new versions.")
    dropped: int = Field(description="Steps the new versions no longer have.")
    added: int = Field(description="New steps.")
    stale_results: int = Field(description="Results computed for an older plan, at the time of each replan.")
    void_results: int = Field(description="Results that must not be read, at the time of each replan.")


class ReplanDetail(BaseModel):
    """One replan span: the router's decision, the replanner's input and what the new version changed."""

    trace_id: str
    project: str | None = None
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
    verdict: str | None = Field(default=None, description="NULL: the replanner's reply was unusable.")
    refusal: str | None = Field(default=None, description="Why a breaker, gate or guard refused it.")
    kept: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list, description="The lesson book the replanner got (content).")
    variables_clean: int | None = None
    variables_stale: int | None = None
    variables_void: int | None = None
    tool_calls: int | None = Field(default=None, description="Tool calls since the last plan (the tool-call gate).")
    budget_used_tokens: int | None = Field(default=None, description="Replanner tokens spent before this replan.")

    @field_validator("start_time", mode="before")
    @classmethod
    def _utc_time(cls, v: Any) -> Any:
        return _utc(v)

    @field_validator("kept", "dropped", "added", "lessons", mode="before")
    @classmethod
    def _list(cls, v: Any) -> Any:
        return [] if v is None else v


class Replanning(BaseModel):
    plan_runs: int = Field(description="Plan-and-execute runs in scope (runs with a plan or replan span).")
    runs_with_replans: int
    replans: int = Field(description="Replan spans (attempts), whatever their verdict.")
    admitted: int
    refused: int
    unusable: int
    oscillations: int = Field(description="Replans the oscillation guard refused (a plan seen before).")
    oscillation_examples: list[str] = Field(default_factory=list)
    by_granularity: list[ReplanGroup]
    by_cause: list[ReplanGroup]
    trips: list[TripRow]
    exhausted: Exhausted
    versions: list[VersionsRow]
    cost: ReplanCost
    runs: list[RunReplanCost] = Field(default_factory=list, description="Top runs by replan + re-execution cost.")
    routes: list[RouteRow] = Field(default_factory=list, description="The granularity router's decisions.")
    steps: ReplanSteps | None = Field(default=None, description="What admitted replans kept, dropped and added.")
    recent_replans: list[ReplanDetail] = Field(default_factory=list, description="The newest 50 replan spans.")
