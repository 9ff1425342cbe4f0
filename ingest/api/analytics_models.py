"""JSON shapes of the analytics endpoints (/work/notes/analytics_api.md is the contract).

Fields are added, never renamed: the dashboards and `steplens report cost` read them by name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ingest.api.models import Run, _utc


class TrendPoint(BaseModel):
    bucket: datetime = Field(description="Bucket start (UTC).")
    count: int


class FailureCluster(BaseModel):
    """Failed runs with the same stop reason and failure signature."""

    stop_reason: str | None
    signature: str = Field(description="`kind[tool] error_type: template`, or the stop reason when no span failed.")
    span_kind: str | None = Field(None, description="Operation class of the last failed span (tool, llm, ...).")
    tool: str | None = None
    error_type: str | None = None
    message_template: str | None = None
    count: int
    share: float = Field(description="count / total_failed")
    first_seen: datetime | None
    last_seen: datetime | None
    versions: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list, description="Up to 3 trace ids, newest first.")
    trend: list[TrendPoint] = Field(default_factory=list)
    # Additions beyond the contract.
    agents: list[str] = Field(default_factory=list)

    @field_validator("first_seen", "last_seen", mode="before")
    @classmethod
    def _utc_times(cls, v: Any) -> Any:
        return _utc(v)


class Failures(BaseModel):
    total_failed: int
    clusters: list[FailureCluster]
    # Additions beyond the contract.
    bucket_seconds: int | None = None
    since: datetime | None = None
    until: datetime | None = None


class ToolCost(BaseModel):
    """USD. total = direct + decision + carry (see docs/analytics.md)."""

    direct: float = 0.0
    decision: float = 0.0
    carry: float = 0.0
    total: float = 0.0


class ToolStats(BaseModel):
    tool: str = Field(description="The tool name; `(unnamed)` for tool spans without one.")
    calls: int
    errors: int
    error_rate: float
    errors_by_type: dict[str, int] = Field(default_factory=dict)
    timeouts: int
    denials: int
    p50_ms: float | None
    p95_ms: float | None
    truncation_rate: float
    dropped_tokens: int
    cost: ToolCost
    examples: list[str] = Field(default_factory=list)
    # Additions beyond the contract.
    runs: int = 0
    observation_tokens: int = Field(0, description="Sum of the calls' observation tokens.")
    estimated_observations: int = Field(0, description="Calls whose observation size is estimated from text length.")
    carry_tokens: int = Field(0, description="Observation tokens re-sent to later LLM calls.")
    unpriced_carry_tokens: int = Field(0, description="Re-sent tokens to models without a known price (not in carry).")
    decision_llm_calls: float = Field(0.0, description="LLM calls that chose the tool, split like their cost.")


class Tools(BaseModel):
    tools: list[ToolStats]
    price_table: dict[str, str] = Field(default_factory=dict)


class CostRow(BaseModel):
    key: str | None
    runs: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    examples: list[str] = Field(default_factory=list)
    # Additions (group_by=tool only): the three parts of cost_usd.
    direct: float | None = None
    decision: float | None = None
    carry: float | None = None


class CostReport(BaseModel):
    group_by: str
    rows: list[CostRow]
    total_cost_usd: float
    price_table: dict[str, str]


class StepView(BaseModel):
    action: str | None = None
    arguments: Any = None
    observation: str | None = None


class DiffStep(BaseModel):
    index: int
    a: StepView | None
    b: StepView | None
    same: bool


class Divergence(BaseModel):
    step: int
    field: Literal["action", "arguments", "observation"]
    a: Any = None
    b: Any = None


class Delta(BaseModel):
    """b minus a."""

    steps: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class Diff(BaseModel):
    a: Run
    b: Run
    first_divergence: Divergence | None
    steps: list[DiffStep]
    delta: Delta
    # Additions beyond the contract.
    warnings: list[str] = Field(default_factory=list)


class ModelPriceOut(BaseModel):
    model: str
    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None  # prompt tokens written to the provider's cache
    reasoning_output_per_mtok: float | None = None  # reasoning output, where priced apart from output


class Prices(BaseModel):
    as_of: str
    sources: list[str]
    models: list[ModelPriceOut]
