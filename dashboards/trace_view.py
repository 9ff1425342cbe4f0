"""Turns a trace's flat span list into what a person reads: the run's steps, each with its
thought, action, tool call, observation, LLM calls and budget check.

Why a pure module: the Trace page, the terminal tree and the tests all need the same reading of
the span contract (design.md §2), and getting it right (truncation marks, errors, budgets) must
be testable without Streamlit. Spans from foreign clients have no step spans; they still get
`errors`, their LLM calls (`llm_calls`) and the raw span list, just no step list.

Message content comes from the span's attributes (`gen_ai.input.messages` / `.output.messages`)
or, for clients that log content instead, from the OTLP log records the query API lists with the
span: the attributes of a `gen_ai.client.inference.operation.details` event, or one message per
`gen_ai.*.message` event and one choice per `gen_ai.choice` event.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from dashboards.models import Evaluation, Run, Score, Span, Trace
from tracer import conventions as c

# The marks the kernel (kernel/truncation.py) and the tracer's content cap (tracer/content.py) put
# where they cut text; matched, not imported, because the dashboards read data, not producers.
_TRUNCATION_MARKS = (
    re.compile(r"\[\.\.\. (\d+) tokens truncated \.\.\.\]"),
    re.compile(r"…\[steplens: truncated (\d+) bytes\]"),
)


_RUN_LIMITS = (
    c.BUDGET_MAX_STEPS,
    c.BUDGET_MAX_INPUT_TOKENS,
    c.BUDGET_MAX_OUTPUT_TOKENS,
    c.BUDGET_MAX_COST_USD,
    c.BUDGET_MAX_SECONDS,
    c.BUDGET_MAX_CONSECUTIVE_ERRORS,
    c.BUDGET_MAX_CONSECUTIVE_UNPARSABLE,
)


def truncation_marks(text: str | None) -> list[str]:
    """The truncation marks present in `text` (empty when nothing was cut)."""
    if not text:
        return []
    return [m.group(0) for pattern in _TRUNCATION_MARKS for m in pattern.finditer(text)]


def as_text(value: Any) -> str | None:
    """Attribute values arrive as strings, numbers or decoded JSON; show them as text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return str(value)


def pretty_json(value: Any) -> str | None:
    """JSON-looking text re-indented for reading; anything else unchanged."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(stripped), ensure_ascii=False, indent=2)
            except ValueError:
                return value
        return value
    return as_text(value)


@dataclass
class LLMCall:
    span_id: str
    name: str
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    duration_ms: float
    attempt: Any = None
    fallback_from: str | None = None
    finish_reasons: Any = None
    estimated: bool = False
    input_messages: str | None = None
    output_messages: str | None = None
    error: str | None = None
    messages_from_logs: bool = False  # the content came from the span's log records, not its attributes


@dataclass
class ToolCallView:
    span_id: str
    tool: str | None
    decision: str | None
    risk: str | None
    side_effect: Any
    arguments: str | None
    result: str | None
    duration_ms: float
    cost_usd: float | None
    error: str | None = None


@dataclass
class BudgetPoint:
    """One budget_check: `used`/`limit` per budget name (steps, input_tokens, cost_usd, seconds)."""

    step_index: int
    used: dict[str, float] = field(default_factory=dict)
    limit: dict[str, float] = field(default_factory=dict)
    headroom: float | None = None
    exhausted: str | None = None


@dataclass
class StepView:
    index: int
    span_id: str
    duration_ms: float
    kind: str | None = None
    action: str | None = None
    parse: str | None = None
    thought: str | None = None
    observation: str | None = None
    truncated: bool = False
    dropped_tokens: int | None = None
    marks: list[str] = field(default_factory=list)
    llm_calls: list[LLMCall] = field(default_factory=list)
    tool_calls: list[ToolCallView] = field(default_factory=list)
    budget: BudgetPoint | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def has_error(self) -> bool:
        return bool(self.errors)


@dataclass
class ErrorView:
    span_id: str
    name: str
    error_type: str | None
    message: str | None
    step_index: int | None


@dataclass
class TraceView:
    run: Run
    spans: list[Span]
    steps: list[StepView]
    errors: list[ErrorView]
    budgets: list[BudgetPoint]
    task: str | None = None
    answer: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    llm_calls: list[LLMCall] = field(default_factory=list)  # every LLM span, in trace order
    evaluations: list[Evaluation] = field(default_factory=list)


def _error_text(span: Span) -> str | None:
    if not span.is_error:
        return None
    parts = [p for p in (span.error_type, span.status_message) if p]
    return ": ".join(parts) if parts else "error"


def truthy(value: Any) -> bool:
    """Attribute booleans may arrive as JSON booleans or as the strings "True"/"true"."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value is True or (isinstance(value, int | float) and value != 0)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _is_step(span: Span) -> bool:
    return span.operation == c.OperationClass.STEP or c.STEP_INDEX in span.attributes


def logged_messages(span: Span) -> tuple[Any, Any]:
    """(input messages, output messages) the client logged for this span; None for each it did not.

    The one-event-per-call form (`gen_ai.client.inference.operation.details`) wins over the
    one-event-per-message form when a client sent both.
    """
    details_in: Any = None
    details_out: Any = None
    inputs: list[Any] = []
    outputs: list[Any] = []
    for entry in span.logs:
        name = entry.event_name
        if name == c.GEN_AI_EVENT_INFERENCE_DETAILS:
            details_in = entry.attributes.get(c.GEN_AI_INPUT_MESSAGES, details_in)
            details_out = entry.attributes.get(c.GEN_AI_OUTPUT_MESSAGES, details_out)
        elif name in c.GEN_AI_INPUT_MESSAGE_EVENTS:
            body = entry.body if isinstance(entry.body, dict) else {"content": entry.body}
            inputs.append({"role": c.GEN_AI_INPUT_MESSAGE_EVENTS[name], **body})
        elif name == c.GEN_AI_EVENT_CHOICE:
            outputs.append(entry.body)
    return (
        details_in if details_in is not None else (inputs or None),
        details_out if details_out is not None else (outputs or None),
    )


def _llm_call(span: Span) -> LLMCall:
    a = span.attributes
    on_span_in, on_span_out = a.get(c.GEN_AI_INPUT_MESSAGES), a.get(c.GEN_AI_OUTPUT_MESSAGES)
    logged_in, logged_out = logged_messages(span) if span.logs else (None, None)
    return LLMCall(
        span_id=span.span_id,
        name=span.name,
        model=span.model or a.get(c.GEN_AI_RESPONSE_MODEL) or a.get(c.GEN_AI_REQUEST_MODEL),
        provider=span.provider,
        input_tokens=span.input_tokens,
        output_tokens=span.output_tokens,
        cost_usd=span.cost_usd,
        duration_ms=span.duration_ms,
        attempt=a.get(c.LLM_ATTEMPT),
        fallback_from=a.get(c.LLM_FALLBACK_FROM),
        finish_reasons=a.get(c.GEN_AI_RESPONSE_FINISH_REASONS),
        estimated=truthy(a.get(c.USAGE_ESTIMATED)),
        input_messages=pretty_json(on_span_in if on_span_in is not None else logged_in),
        output_messages=pretty_json(on_span_out if on_span_out is not None else logged_out),
        error=_error_text(span),
        messages_from_logs=(on_span_in is None and logged_in is not None)
        or (on_span_out is None and logged_out is not None),
    )


def _tool_call(span: Span) -> ToolCallView:
    a = span.attributes
    return ToolCallView(
        span_id=span.span_id,
        tool=span.tool_name or a.get(c.GEN_AI_TOOL_NAME),
        decision=a.get(c.TOOL_DECISION),
        risk=a.get(c.TOOL_RISK),
        side_effect=a.get(c.TOOL_SIDE_EFFECT),
        arguments=pretty_json(a.get(c.GEN_AI_TOOL_CALL_ARGUMENTS)),
        result=as_text(a.get(c.GEN_AI_TOOL_CALL_RESULT)),
        duration_ms=span.duration_ms,
        cost_usd=span.cost_usd,
        error=_error_text(span),
    )


def _budget(span: Span, step_index: int) -> BudgetPoint:
    a = span.attributes
    point = BudgetPoint(step_index=step_index, headroom=_num(a.get(c.BUDGET_HEADROOM)))
    point.exhausted = a.get(c.BUDGET_EXHAUSTED) or None
    for name in c.BUDGET_NAMES:
        used, limit = _num(a.get(c.budget_used(name))), _num(a.get(c.budget_limit(name)))
        if used is not None:
            point.used[name] = used
        if limit is not None:
            point.limit[name] = limit
    return point


def _descendants(root: Span, children: dict[str, list[Span]]) -> list[Span]:
    out: list[Span] = []
    stack = list(reversed(children.get(root.span_id, [])))
    seen: set[str] = {root.span_id}
    while stack:
        span = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        out.append(span)
        stack.extend(reversed(children.get(span.span_id, [])))
    return out


def _step(span: Span, position: int, children: dict[str, list[Span]]) -> StepView:
    a = span.attributes
    index = span.step_index if span.step_index is not None else a.get(c.STEP_INDEX, position)
    try:
        index = int(index)
    except (TypeError, ValueError):
        index = position
    observation = as_text(a.get(c.STEP_OBSERVATION))
    step = StepView(
        index=index,
        span_id=span.span_id,
        duration_ms=span.duration_ms,
        kind=a.get(c.STEP_KIND),
        action=a.get(c.STEP_ACTION),
        parse=a.get(c.STEP_PARSE),
        thought=as_text(a.get(c.STEP_THOUGHT)),
        observation=observation,
        marks=truncation_marks(observation),
    )
    if own := _error_text(span):
        step.errors.append(f"{span.name}: {own}")
    for child in _descendants(span, children):
        ca = child.attributes
        if child.operation == c.OperationClass.LLM:
            step.llm_calls.append(_llm_call(child))
        elif child.operation == c.OperationClass.TOOL:
            call = _tool_call(child)
            step.tool_calls.append(call)
            step.marks.extend(m for m in truncation_marks(call.result) if m not in step.marks)
        elif child.operation == c.OperationClass.BUDGET:
            step.budget = _budget(child, index)
        elif child.operation == c.OperationClass.TRUNCATE and truthy(ca.get(c.TRUNCATE_TRUNCATED)):
            step.truncated = True
            dropped = _num(ca.get(c.TRUNCATE_DROPPED_TOKENS))
            step.dropped_tokens = int(dropped) if dropped is not None else None
        if err := _error_text(child):
            step.errors.append(f"{child.name}: {err}")
    step.truncated = step.truncated or bool(step.marks)
    return step


# How a run's stop reason was found (runs.stop_reason_source), as the trace page says it.
SOURCE_LABELS = {"reported": " (reported by the client)", "inferred": " (inferred from the spans)"}


def agent_rows(run: Run) -> list[dict[str, Any]]:
    """The run's agent spans as table rows, nested agents indented under the agent that called them."""
    depth: dict[str, int] = {}
    rows = []
    for a in run.agents:
        level = depth.get(a.parent_span_id or "", -1) + 1 if a.parent_span_id else 0
        depth[a.span_id] = level
        rows.append({
            "agent": "  " * level + (a.agent or a.name or "?"), "kind": a.kind, "version": a.version,
            "steps": a.steps, "LLM calls": a.llm_calls, "tool calls": a.tool_calls, "tool errors": a.tool_errors,
            "tokens in": a.input_tokens, "tokens out": a.output_tokens, "cost $": a.cost_usd, "errors": a.errors,
            "ok": a.ok,
        })  # fmt: skip
    return rows


def score_rows(scores: list[Score]) -> list[dict[str, Any]]:
    """The trace's scores as the Scores panel's rows, oldest first: name, value, source, author, comment,
    time, and the span a span score is about. Values are text cells, never Markdown."""
    rows = []
    for s in scores:
        value = s.value if not isinstance(s.value, bool) else ("true" if s.value else "false")
        if s.label is not None and s.data_type == "numeric":
            value = f"{value} ({s.label})"
        rows.append({
            "score": s.name, "value": None if value is None else str(value), "source": s.source, "author": s.author,
            "comment": s.comment, "time": s.created_at, "span": s.span_id,
        })  # fmt: skip
    return rows


def build_trace_view(trace: Trace) -> TraceView:
    """Read a trace the way the span contract describes a run (see module docstring)."""
    by_id = {s.span_id: s for s in trace.spans}
    children: dict[str, list[Span]] = {}
    for span in trace.spans:
        if span.parent_span_id and span.parent_span_id in by_id:
            children.setdefault(span.parent_span_id, []).append(span)
    steps = [_step(s, i, children) for i, s in enumerate(x for x in trace.spans if _is_step(x))]
    steps.sort(key=lambda s: s.index)
    step_of: dict[str, int] = {}
    for st in steps:
        step_of[st.span_id] = st.index
        for d in _descendants(by_id[st.span_id], children):
            step_of.setdefault(d.span_id, st.index)
    errors = [
        ErrorView(s.span_id, s.name, s.error_type, s.status_message, step_of.get(s.span_id))
        for s in trace.spans
        if s.is_error
    ]
    root = next((s for s in trace.spans if s.operation == c.OperationClass.AGENT), trace.spans[0] if trace.spans else None)
    ra = root.attributes if root else {}
    limits = {k: ra[k] for k in _RUN_LIMITS if k in ra}
    return TraceView(
        run=trace.run,
        spans=trace.spans,
        steps=steps,
        errors=errors,
        budgets=[s.budget for s in steps if s.budget is not None],
        task=as_text(ra.get(c.RUN_TASK)),
        answer=as_text(ra.get(c.RUN_ANSWER)),
        limits=limits,
        llm_calls=[_llm_call(s) for s in trace.spans if s.operation == c.OperationClass.LLM],
        evaluations=list(trace.evaluations),
    )
