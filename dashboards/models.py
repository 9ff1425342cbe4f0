"""Typed views of the query API's JSON, as the dashboards read it.

Why the dashboards keep their own models instead of importing ingest's: design.md §1 lets the
dashboards depend on the query API's JSON only, so they can run against an older or newer server.
Every field has a default and unknown fields are ignored, so an added field never breaks a page
and a field an old server lacks shows as empty instead of crashing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RunAgent(_Model):
    """One agent/workflow span of a run with its own counts (GET /api/traces run.agents)."""

    span_id: str
    parent_span_id: str | None = None
    kind: str | None = None
    agent: str | None = None
    version: str | None = None
    name: str | None = None
    steps: int | None = None
    llm_calls: int | None = None
    tool_calls: int | None = None
    tool_errors: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    errors: int | None = None
    ok: bool | None = None


class Run(_Model):
    trace_id: str
    project: str | None = None
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
    cost_usd: float | None = None
    models: list[str] = Field(default_factory=list)
    start_time: datetime | None = None
    duration_ms: float | None = None
    name: str | None = None
    environment: str | None = None
    mode: str | None = None  # live, shadow, eval, replay; None: the client named none (live)
    user_id: str | None = None
    conversation_id: str | None = None  # the session it is a turn of
    failure_signature: str | None = None
    span_count: int | None = None
    stop_reason_source: str | None = None
    failure_evidence: str | None = None
    agents: list[RunAgent] = Field(default_factory=list)
    sub_agents: list[str] = Field(default_factory=list)
    scores: dict[str, bool | float | str | None] = Field(default_factory=dict)

    @property
    def scores_text(self) -> str:
        """The run's latest scores as one line, `name=value` by name (true/false for booleans)."""
        def shown(v: bool | float | str | None) -> str:
            return ("true" if v else "false") if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v)

        return " · ".join(f"{name}={shown(value)}" for name, value in sorted(self.scores.items()))


class RunsPage(_Model):
    runs: list[Run] = Field(default_factory=list)
    next: str | None = None


class LogEntry(_Model):
    """An OTLP log record keyed to a span (a GenAI event: messages, inference details, evaluation)."""

    span_id: str | None = None
    time: datetime | None = None
    event_name: str | None = None
    severity_text: str | None = None
    body: Any = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class Evaluation(_Model):
    span_id: str | None = None
    name: str | None = None
    score_value: float | None = None
    score_label: str | None = None
    explanation: str | None = None


class Score(_Model):
    """A score of the trace (GET /api/traces `scores`, GET /api/scores)."""

    score_id: str | None = None
    name: str | None = None
    value: bool | float | str | None = None
    label: str | None = None
    data_type: str | None = None
    comment: str | None = None
    source: str | None = None
    author: str | None = None
    created_at: datetime | None = None
    span_id: str | None = None
    session_id: str | None = None


class Span(_Model):
    span_id: str
    parent_span_id: str | None = None
    name: str = ""
    kind: str | None = None
    operation: str | None = None
    start_time: datetime
    end_time: datetime
    duration_ms: float = 0.0
    status: str = "UNSET"
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
    depth: int = 0
    children: list[str] = Field(default_factory=list)
    step_index: int | None = None
    logs: list[LogEntry] = Field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return self.status == "ERROR" or bool(self.error_type)


class Trace(_Model):
    trace_id: str
    run: Run
    spans: list[Span] = Field(default_factory=list)
    logs: list[LogEntry] = Field(default_factory=list)
    evaluations: list[Evaluation] = Field(default_factory=list)
    scores: list[Score] = Field(default_factory=list)


class StopReasonCount(_Model):
    stop_reason: str | None = None
    runs: int = 0


class Aggregates(_Model):
    runs: int = 0
    ok_runs: int = 0
    failed_runs: int = 0
    success_rate: float | None = None
    p50_duration_ms: float | None = None
    p95_duration_ms: float | None = None
    mean_steps: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    handoff_runs: int = 0
    handoff_rate: float | None = None


class HandoffRate(_Model):
    """Hand-off rate of one agent version (GET /api/overview `handoffs`)."""

    agent: str | None = None
    version: str | None = None
    runs: int = 0
    handoff_runs: int = 0
    handoff_rate: float = 0.0
    reasons: dict[str, int] = Field(default_factory=dict)


class Bucket(Aggregates):
    start: datetime
    end: datetime | None = None


class ScoreAggregate(_Model):
    """Scores of one name on one agent/version's runs of one day (GET /api/overview `scores`)."""

    name: str = ""
    data_type: str | None = None
    agent: str | None = None
    version: str | None = None
    day: datetime | None = None
    n: int = 0
    mean: float | None = None
    share_true: float | None = None
    labels: dict[str, int] | None = None


class Overview(_Model):
    since: datetime | None = None
    until: datetime | None = None
    bucket_seconds: int = 0
    totals: Aggregates = Field(default_factory=Aggregates)
    stop_reasons: list[StopReasonCount] = Field(default_factory=list)
    series: list[Bucket] = Field(default_factory=list)
    handoffs: list[HandoffRate] = Field(default_factory=list)
    scores: list[ScoreAggregate] = Field(default_factory=list)


class TrendPoint(_Model):
    bucket: datetime
    count: int = 0


class FailureCluster(_Model):
    stop_reason: str | None = None
    signature: str = ""
    span_kind: str | None = None
    tool: str | None = None
    error_type: str | None = None
    message_template: str | None = None
    count: int = 0
    share: float = 0.0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    versions: list[str | None] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    trend: list[TrendPoint] = Field(default_factory=list)


class Failures(_Model):
    total_failed: int = 0
    clusters: list[FailureCluster] = Field(default_factory=list)


class ToolCost(_Model):
    direct: float = 0.0
    decision: float = 0.0
    carry: float = 0.0
    total: float = 0.0


class ToolStats(_Model):
    tool: str
    calls: int = 0
    errors: int = 0
    error_rate: float = 0.0
    errors_by_type: dict[str, int] = Field(default_factory=dict)
    timeouts: int = 0
    denials: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    truncation_rate: float = 0.0
    dropped_tokens: int = 0
    cost: ToolCost = Field(default_factory=ToolCost)
    examples: list[str] = Field(default_factory=list)


class Tools(_Model):
    tools: list[ToolStats] = Field(default_factory=list)


class CostRow(_Model):
    key: str | None = None
    runs: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    examples: list[str] = Field(default_factory=list)


class PriceTableInfo(_Model):
    as_of: str | None = None


class CostReport(_Model):
    group_by: str = ""
    rows: list[CostRow] = Field(default_factory=list)
    total_cost_usd: float = 0.0
    price_table: PriceTableInfo = Field(default_factory=PriceTableInfo)


class DiffSide(_Model):
    action: Any = None
    arguments: Any = None
    observation: Any = None


class DiffStep(_Model):
    index: int
    a: DiffSide | None = None
    b: DiffSide | None = None
    same: bool = False


class Divergence(_Model):
    step: int
    field: str
    a: Any = None
    b: Any = None


class DiffDelta(_Model):
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Diff(_Model):
    a: Run
    b: Run
    first_divergence: Divergence | None = None
    steps: list[DiffStep] = Field(default_factory=list)
    delta: DiffDelta = Field(default_factory=DiffDelta)


class ModelPrice(_Model):
    model: str
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    cached_input_per_mtok: float | None = None


class Prices(_Model):
    as_of: str | None = None
    sources: list[Any] = Field(default_factory=list)
    models: list[ModelPrice] = Field(default_factory=list)
