"""The JSON shapes of the query API (design.md §4): a contract, so fields are added, never renamed.

Timestamps leave as ISO 8601 with an explicit UTC offset: the store keeps naive UTC, and a
client guessing the zone of a bare timestamp is a classic off-by-hours bug.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field, field_validator

from ingest.api.score_models import ScoreAggregate, ScoreOut, ScoreValue


def _utc(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class RunAgent(BaseModel):
    """One agent (or workflow) span of a run, with the calls made in its own scope (not its sub-agents')."""

    span_id: str
    parent_span_id: str | None = Field(None, description="The enclosing agent/workflow span, if any.")
    kind: str
    agent: str | None = None
    version: str | None = None
    name: str
    steps: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    errors: int = 0
    ok: bool = True


class Run(BaseModel):
    """One agent run (a row of the runs table)."""

    trace_id: str
    project: str
    agent: str | None = None
    version: str | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    steps: int | None = None
    llm_calls: int | None = None
    tool_calls: int | None = None
    tool_errors: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = Field(None, description=(
        "Sum of the run's priced LLM and tool spans (span cost, else the price table). null = unknown: no "
        "span could be priced. A run span declaring steplens.usage.cost_usd (the steplens kernel) makes "
        "'nothing priced' 0."))
    models: list[str] = Field(default_factory=list)
    start_time: datetime | None = None
    duration_ms: float | None = None
    # Additions beyond the contract's minimum.
    end_time: datetime | None = None
    name: str | None = None
    service: str | None = None
    environment: str | None = None
    user_id: str | None = None
    conversation_id: str | None = None
    mode: str | None = None
    span_count: int | None = None
    error_spans: int | None = None
    failure_signature: str | None = None
    root_span_id: str | None = None
    stop_reason_source: Literal["reported", "inferred"] | None = Field(None, description=(
        "How ok/stop_reason/steps were found: 'reported' by the run span (steplens.run.*), 'inferred' from "
        "the trace's spans (design.md §3 'Runs of foreign clients'); null until the trace's root is stored."))
    failure_evidence: str | None = Field(None, description="A failed run's evidence: exception type: message.")
    handoff_reason: str | None = Field(None, description=(
        "Why the run was handed to a human (steplens.run.handoff.reason: llm_unavailable, max_steps, "
        "replan_breaker, escalation); null = not handed off."))
    handoff_target: str | None = Field(None, description="Who the run was handed to (steplens.run.handoff.target).")
    task_id: str | None = Field(None, description=(
        "The async task this run ran (steplens.task.id; kernel.tasks); null = not a task's run."))
    release_name: str | None = Field(None, description="The gray release that routed the run (steplens.release.name).")
    release_cohort: str | None = Field(None, description=(
        "The run's side of that release (steplens.release.cohort): stable, candidate, or shadow (a mirror, mode shadow)."))
    release_primary_trace_id: str | None = Field(None, description="A shadow run's: the trace of the live run it mirrors.")
    agents: list[RunAgent] = Field(default_factory=list, description=(
        "The run's agent and workflow spans in start order, each with its own counts (sub-agents, handoffs); "
        "empty for runs whose run span reported their outcome."))
    scores: dict[str, ScoreValue] = Field(default_factory=dict, description=(
        "The latest value of each score name on this run's trace (run or span scores; GET /api/scores has them all)."))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sub_agents(self) -> list[str]:
        """Names of the other agents that ran under the run's top span (handoffs, agents as tools,
        sub-graphs, crews), in start order, once each."""
        names = [
            a.agent for a in self.agents
            if a.span_id != self.root_span_id and a.agent and a.kind == "agent" and a.agent != self.agent
        ]  # fmt: skip
        return list(dict.fromkeys(names))

    @field_validator("start_time", "end_time", mode="before")
    @classmethod
    def _utc_times(cls, v: Any) -> Any:
        return _utc(v)

    @field_validator("agents", mode="before")
    @classmethod
    def _agents(cls, v: Any) -> Any:
        parsed = _parse_json(v, [])
        return [a for a in parsed if isinstance(a, dict) and "span_id" in a]

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, v: Any) -> Any:
        return [m for m in v if m is not None] if v is not None else []


class RunsPage(BaseModel):
    runs: list[Run]
    next: str | None = Field(description="Opaque cursor for the next page; null on the last page.")


class LogEntry(BaseModel):
    """One OTLP log record of the trace (a GenAI event such as gen_ai.client.inference.operation.details,
    gen_ai.user.message, gen_ai.choice, gen_ai.evaluation.result, or any other log)."""

    span_id: str | None = None
    time: datetime
    observed_time: datetime | None = None
    event_name: str | None = None
    severity_number: int | None = None
    severity_text: str | None = None
    body: Any = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    scope: str | None = None
    service: str | None = None

    @field_validator("time", "observed_time", mode="before")
    @classmethod
    def _utc_times(cls, v: Any) -> Any:
        return _utc(v)

    @field_validator("attributes", mode="before")
    @classmethod
    def _json_object(cls, v: Any) -> Any:
        return _parse_json(v, {})

    @field_validator("body", mode="before")
    @classmethod
    def _json_any(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return json.loads(v)
            except ValueError:
                return v
        return v


class Evaluation(BaseModel):
    """A `gen_ai.evaluation.result` event: a score some evaluator gave the span it is keyed to."""

    span_id: str | None = None
    time: datetime
    name: str | None = Field(None, description="gen_ai.evaluation.name")
    score_value: float | None = Field(None, description="gen_ai.evaluation.score.value")
    score_label: str | None = Field(None, description="gen_ai.evaluation.score.label")
    explanation: str | None = Field(None, description="gen_ai.evaluation.explanation")
    attributes: dict[str, Any] = Field(default_factory=dict)

    @field_validator("time", mode="before")
    @classmethod
    def _utc_times(cls, v: Any) -> Any:
        return _utc(v)

    @field_validator("attributes", mode="before")
    @classmethod
    def _json_object(cls, v: Any) -> Any:
        return _parse_json(v, {})


class Span(BaseModel):
    """One span, in tree order inside a trace: `depth` 0 is a root, `children` are span ids."""

    span_id: str
    parent_span_id: str | None = None
    name: str
    kind: str
    operation: str
    start_time: datetime
    end_time: datetime
    duration_ms: float
    status: Literal["UNSET", "OK", "ERROR"] | str
    status_message: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    tool_name: str | None = None
    error_type: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[Any] = Field(default_factory=list)
    # Additions beyond the contract's minimum.
    depth: int = 0
    children: list[str] = Field(default_factory=list)
    response_model: str | None = None
    cache_read_tokens: int | None = None
    step_index: int | None = None
    service: str | None = None
    scope: str | None = None
    resource: dict[str, Any] = Field(default_factory=dict)
    logs: list[LogEntry] = Field(default_factory=list, description=(
        "OTLP log records keyed to this span (GenAI events: messages, inference details, evaluations), "
        "oldest first, whatever the order they arrived in."))

    @field_validator("start_time", "end_time", mode="before")
    @classmethod
    def _utc_times(cls, v: Any) -> Any:
        return _utc(v)

    @field_validator("attributes", "resource", mode="before")
    @classmethod
    def _json_object(cls, v: Any) -> Any:
        return _parse_json(v, {})

    @field_validator("events", mode="before")
    @classmethod
    def _json_list(cls, v: Any) -> Any:
        return _parse_json(v, [])


def _parse_json(v: Any, empty: Any) -> Any:
    """JSON columns arrive as text. Unparsable text is kept visible under `_unparsed`, not dropped."""
    if v is None:
        return empty
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return {"_unparsed": v} if isinstance(empty, dict) else [{"_unparsed": v}]
    if isinstance(empty, dict) and not isinstance(v, dict):
        return {"_value": v}
    if isinstance(empty, list) and not isinstance(v, list):
        return [v]
    return v


class Trace(BaseModel):
    """A trace: its run and all its spans as a flat list in tree order (see Span)."""

    trace_id: str
    run: Run
    spans: list[Span]
    # Additions beyond the contract's minimum.
    logs: list[LogEntry] = Field(default_factory=list, description=(
        "Log records of this trace keyed to no span of it (no span id, or their span has not arrived)."))
    evaluations: list[Evaluation] = Field(default_factory=list, description=(
        "gen_ai.evaluation.result events of this trace, each with the span it scores."))
    scores: list[ScoreOut] = Field(default_factory=list, description=(
        "Every score of this trace (its run and its spans), oldest first."))


class StopReasonCount(BaseModel):
    stop_reason: str | None
    runs: int


class Aggregates(BaseModel):
    """Totals over a set of runs. Rates and percentiles are null when there are no runs to rate."""

    runs: int = 0
    ok_runs: int = 0
    failed_runs: int = 0
    success_rate: float | None = Field(None, description="ok_runs / (ok_runs + failed_runs)")
    p50_duration_ms: float | None = None
    p95_duration_ms: float | None = None
    mean_steps: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    handoff_runs: int = Field(0, description="Runs handed to a human (a hand-off reason recorded).")
    handoff_rate: float | None = Field(None, description="handoff_runs / runs; null when there are no runs.")


class HandoffRate(BaseModel):
    """The hand-off rate of one agent version (the "transfer-to-human rate" a team watches)."""

    agent: str | None
    version: str | None
    runs: int
    handoff_runs: int
    handoff_rate: float = Field(description="handoff_runs / runs.")
    reasons: dict[str, int] = Field(default_factory=dict, description="Hand-offs per reason.")


class Bucket(Aggregates):
    start: datetime
    end: datetime


class Overview(BaseModel):
    since: datetime | None = Field(description="Range start (the earliest run when not given).")
    until: datetime
    bucket_seconds: int
    totals: Aggregates
    stop_reasons: list[StopReasonCount]
    series: list[Bucket]
    handoffs: list[HandoffRate] = Field(default_factory=list, description=(
        "Hand-off rate per agent and version over the range, most runs first."))
    scores: list[ScoreAggregate] = Field(default_factory=list, description=(
        "Scores of the runs in range per name, agent, version and run start day (UTC): mean, share true, labels."))
