"""The kernel's shared data model: the contract between the loop, tools, parser and LLM layer.

Everything here is a pydantic model so that a `RunResult` (and everything inside it) round-trips
through JSON: stored runs can be inspected, diffed and replayed exactly.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracer.conventions import (
    GuardRule,
    HandoffReason,
    ParseStatus,
    StepKind,
    StopReason,
    ToolDecision,
    ToolErrorCode,
)

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call the model asked for. `arguments` is always a dict; non-object JSON is kept under
    the key `_raw` so nothing the model said is lost."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """A chat message in OpenAI shape (the lingua franca of providers)."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class Usage(BaseModel):
    """Token usage. `estimated` is true when the provider did not report usage and we counted."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            estimated=self.estimated or other.estimated,
        )


class LLMResponse(BaseModel):
    """What any LLM adapter returns for one completion."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    provider: str = ""
    finish_reason: str | None = None
    # Set by format problems the adapter could not resolve (e.g. tool_call arguments that are
    # not valid JSON). The loop turns it into a format_error step instead of crashing.
    format_error: str | None = None


class ToolError(BaseModel):
    """The structured body of an error observation."""

    error: ToolErrorCode
    message: str


class Observation(BaseModel):
    """What a tool dispatch produced, exactly as the model will see it (before truncation)."""

    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    error: ToolError | None = None
    decision: ToolDecision = ToolDecision.EXECUTED
    duration_s: float = 0.0
    cost_usd: float = 0.0
    # The pending approval this call waits for (decision pending_approval), else None.
    approval_id: str | None = None


class GuardEvent(BaseModel):
    """A loop-guard refusal: the call (or finish) that did not happen, and what the model was told
    instead. Not an Observation: nothing was dispatched, so it is no tool call, error or denial."""

    rule: GuardRule
    severity: Literal["soft", "hard"]
    message: str
    tool_name: str | None = None  # None for a refused finish
    tool_call_id: str | None = None
    previous_step: int | None = None
    counts_as_error: bool = False


class StepRecord(BaseModel):
    """One loop iteration, as recorded in the `RunResult`."""

    index: int
    kind: StepKind
    parse: ParseStatus = ParseStatus.OK
    thought: str | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    # One per dispatched call (calls the loop guard refused have a guard event instead).
    observations: list[Observation] = Field(default_factory=list)
    guard_events: list[GuardEvent] = Field(default_factory=list)
    # The observation text(s) after truncation, as the model saw them.
    observation_text: str | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    started_at: float = 0.0  # unix seconds
    duration_s: float = 0.0
    # The final answer the model gave in this step (also when a guard refused to let it finish).
    answer: str | None = None
    # Under plan-and-execute: the plan version and the plan step this record executed.
    plan_version: int | None = None
    plan_step_id: str | None = None


class Handoff(BaseModel):
    """A run handed to a human (kernel.handoff): why, to whom, and what the model or limit said."""

    reason: HandoffReason
    target: str
    detail: str | None = None


class RunResult(BaseModel):
    """The outcome of one agent run. `ok` is true only for stop_reason `finish`."""

    model_config = ConfigDict(use_enum_values=False)

    ok: bool
    stop_reason: StopReason
    answer: str | None = None
    error: str | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    duration_s: float = 0.0
    trace_id: str | None = None
    agent: str = "agent"
    version: str = "0"
    models: list[str] = Field(default_factory=list)
    # Models with no known price: their calls counted $0 against the cost budget.
    unpriced_models: list[str] = Field(default_factory=list)
    task: str | None = None
    conversation_id: str | None = None
    user_id: str | None = None
    handoff: Handoff | None = None  # set when the agent's hand-off policy took the run

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> RunResult:
        return cls.model_validate_json(data)
