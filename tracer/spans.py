"""Span helpers for the kernel: plain values in, exactly the attributes of design.md §2 out.

Each helper starts a span and returns a small scope object to use in a `with` block: entering makes
the span current (so children nest under it), the scope's `record...`/`finish`/`fail` methods add
the outcome in one `set_attributes` call, and leaving ends the span. An exception escaping the
block marks the span ERROR with `error.type` and a short, redacted message, and is re-raised.

The hot path is cheap when tracing is off: with the no-op tracer the span is not recording, so no
attribute dict, content string or JSON is ever built, and no context is attached for a span that
has no valid context. Content goes through the active `ContentPolicy` (capture switch, redaction,
size cap) and is skipped entirely when capture is off.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracer import _state
from tracer import conventions as c
from tracer.clock import stamp_ns
from tracer.content import output_message

_log = logging.getLogger(__name__)

_INTERNAL = SpanKind.INTERNAL
_CLIENT = SpanKind.CLIENT

# Span name prefixes derived from the conventions' templates ("execute_tool {tool}" → "execute_tool ").
_RUN_PREFIX = c.SPAN_RUN.split("{", 1)[0]
_PLAN_PREFIX = c.SPAN_PLAN.split("{", 1)[0]
_REPLAN_PREFIX = c.SPAN_REPLAN.split("{", 1)[0]
_STEP_PREFIX = c.SPAN_STEP.split("{", 1)[0]
_CHAT_PREFIX = c.SPAN_CHAT.split("{", 1)[0]
_TOOL_PREFIX = c.SPAN_TOOL.split("{", 1)[0]

_BUDGET_MAX_KEYS: dict[str, str] = {
    "max_steps": c.BUDGET_MAX_STEPS,
    "max_input_tokens": c.BUDGET_MAX_INPUT_TOKENS,
    "max_output_tokens": c.BUDGET_MAX_OUTPUT_TOKENS,
    "max_cost_usd": c.BUDGET_MAX_COST_USD,
    "max_seconds": c.BUDGET_MAX_SECONDS,
    "max_consecutive_errors": c.BUDGET_MAX_CONSECUTIVE_ERRORS,
    "max_consecutive_unparsable": c.BUDGET_MAX_CONSECUTIVE_UNPARSABLE,
}


def error_type_of(exc: BaseException) -> str:
    """`error.type` for an exception: its own code when it carries one, else its class name."""
    for name in ("error_type", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, str) and value:
            return value
    return type(exc).__name__


def _val(value: Any) -> Any:
    """Enums (StrEnum) become their plain value so exported attributes are plain strings."""
    return value.value if hasattr(value, "value") and isinstance(value, str) else value


def _float(value: Any) -> float | None:
    """Numbers become float; anything else becomes None, which the SDK drops with a warning
    (a numeric attribute that is sometimes a string would break ingest's columns)."""
    return float(value) if isinstance(value, int | float) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def _set(span: Span, attrs: dict[str, Any]) -> None:
    """One set_attributes call; values that were not numbers where numbers belong are left out."""
    if None in attrs.values():
        dropped = [k for k, v in attrs.items() if v is None]
        _log.warning("steplens: attributes %s had values of the wrong type and were left out", dropped)
        attrs = {k: v for k, v in attrs.items() if v is not None}
    span.set_attributes(attrs)


def _start(name: str, kind: SpanKind, context: Context | None = None, links: Iterable[trace.Link] | None = None) -> Span:
    return _state.current.tracer.start_span(name, context=context, kind=kind, start_time=stamp_ns(), links=links)


class SpanScope:
    """Base of all scopes: make the span current on enter, end it on exit, mark failures."""

    __slots__ = ("_failed", "_token", "recording", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.recording = span.is_recording()
        self._token: object | None = None
        self._failed = False

    def __enter__(self) -> Any:
        if self.recording or self.span.get_span_context().is_valid:
            self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        try:
            if exc is not None and self.recording and not self._failed:
                self._record_exception(exc)
            self._on_exit(exc)
        except Exception:  # noqa: BLE001 - tracing must never break the agent's run
            _log.warning("steplens: recording the end of span %r failed", self.span, exc_info=True)
        finally:
            if self._token is not None:
                otel_context.detach(self._token)
                self._token = None
            self.span.end(end_time=stamp_ns())
        return False

    def _on_exit(self, exc: BaseException | None) -> None:
        """Hook for scopes that record something when they end (metrics)."""

    def _record_exception(self, exc: BaseException) -> None:
        policy = _state.policy()
        message = policy.short(f"{type(exc).__name__}: {exc}")
        self._failed = True
        self.span.set_attribute(c.ERROR_TYPE, error_type_of(exc))
        self.span.set_status(Status(StatusCode.ERROR, message))
        stack = "".join(traceback.format_exception(exc))
        self.span.record_exception(
            exc,
            timestamp=stamp_ns(),
            attributes={
                c.EXCEPTION_MESSAGE: policy.short(str(exc), 1024),
                c.EXCEPTION_STACKTRACE: policy.short(stack, 8192),
            },
        )

    def fail(self, error_type: str, message: str | None = None) -> None:
        """Mark the span failed without an exception (e.g. an error observation)."""
        self._failed = True
        if not self.recording:
            return
        self.span.set_attribute(c.ERROR_TYPE, _val(error_type))
        text = _state.policy().short(message) if message else str(_val(error_type))
        self.span.set_status(Status(StatusCode.ERROR, text))

    def cancelled(self, message: str) -> None:
        """Mark the span cut short by its run's cancellation: an event, not an ERROR status, so
        a tool or step that was merely interrupted is not counted as failing."""
        self._failed = True  # the escaping CancelledError is not recorded as the span's error
        if self.recording:
            self.span.add_event(c.EVENT_CANCELLED, {"message": _state.policy().short(message)}, timestamp=stamp_ns())

    @property
    def trace_id(self) -> str | None:
        """The trace id as 32 hex digits (None when there is no valid trace, e.g. tracing off)."""
        ctx = self.span.get_span_context()
        return format(ctx.trace_id, "032x") if ctx.is_valid else None

    @property
    def span_id(self) -> str | None:
        ctx = self.span.get_span_context()
        return format(ctx.span_id, "016x") if ctx.is_valid else None


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


class RunRef:
    """Where a run span is, for a later run to link to (a shadow run to the live run it mirrors).
    Opaque to callers: they only pass it back to `run_span(primary=...)`."""

    __slots__ = ("context",)

    def __init__(self, context: trace.SpanContext) -> None:
        self.context = context

    @property
    def trace_id(self) -> str | None:
        return format(self.context.trace_id, "032x") if self.context.is_valid else None


class RunScope(SpanScope):
    """The run span; the outcome arrives at the end (`finish`) because only then is it known."""

    __slots__ = ()

    def ref(self) -> RunRef:
        """This run span, for a shadow run to link to."""
        return RunRef(self.span.get_span_context())

    def finish(
        self,
        *,
        ok: bool,
        stop_reason: str,
        steps: int,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
        answer: str | None = None,
        error: str | None = None,
        handoff_reason: str | None = None,
        handoff_target: str | None = None,
    ) -> None:
        """The run's outcome. A run that did not finish is ERROR with `error.type` = stop reason;
        one handed to a human also says why and to whom (`steplens.run.handoff.*`)."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {
            c.RUN_OK: bool(ok),
            c.RUN_STOP_REASON: _val(stop_reason),
            c.RUN_STEPS: _int(steps),
            c.USAGE_INPUT_TOKENS: _int(input_tokens),
            c.USAGE_OUTPUT_TOKENS: _int(output_tokens),
        }
        if cost_usd is not None:
            attrs[c.USAGE_COST_USD] = _float(cost_usd)
        if answer is not None and (text := _state.policy().text(answer)) is not None:
            attrs[c.RUN_ANSWER] = text
        if handoff_reason is not None:
            attrs[c.RUN_HANDOFF_REASON] = _val(handoff_reason)
            if handoff_target is not None:
                attrs[c.RUN_HANDOFF_TARGET] = str(handoff_target)
        _set(self.span, attrs)
        if not ok:
            self.fail(_val(stop_reason), error or str(_val(stop_reason)))


def run_span(
    agent: str,
    *,
    agent_version: str | None = None,
    agent_id: str | None = None,
    conversation_id: str | None = None,
    model: str | None = None,
    mode: str = c.RunMode.LIVE,
    budget: Mapping[str, float | int | None] | None = None,
    task: str | None = None,
    eval_run_id: str | None = None,
    eval_case_id: str | None = None,
    user_id: str | None = None,
    context: Context | None = None,
    task_id: str | None = None,
    task_queued_s: float | None = None,
    task_attempt: int | None = None,
    release_name: str | None = None,
    release_cohort: str | None = None,
    primary: RunRef | None = None,
) -> RunScope:
    """`invoke_agent {agent}`: one per run. The current span (e.g. a web request) is its parent.

    budget: the limits keyed like the kernel's Budget fields (`max_steps`, `max_cost_usd`, ...);
    None values (unlimited) are left out. release_name/release_cohort: the gray release that routed
    the run; `primary` (a shadow run's): the live run it mirrors, linked and named by trace id.
    """
    links = [trace.Link(primary.context)] if primary is not None and primary.context.is_valid else None
    if (primary is not None or release_cohort == c.ReleaseCohort.SHADOW) and context is None:
        context = Context()  # a shadow run is its own trace, never a child of the caller's request
    scope = RunScope(_start(_RUN_PREFIX + str(agent), _INTERNAL, context, links))
    if scope.recording:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
            c.GEN_AI_AGENT_NAME: agent,
            c.RUN_MODE: _val(mode),
        }
        if agent_version is not None:
            attrs[c.GEN_AI_AGENT_VERSION] = agent_version
        if agent_id is not None:
            attrs[c.GEN_AI_AGENT_ID] = agent_id
        if conversation_id is not None:
            attrs[c.GEN_AI_CONVERSATION_ID] = conversation_id
        if model is not None:
            attrs[c.GEN_AI_REQUEST_MODEL] = model
        if eval_run_id is not None:
            attrs[c.EVAL_RUN_ID] = eval_run_id
        if eval_case_id is not None:
            attrs[c.EVAL_CASE_ID] = eval_case_id
        if user_id is not None:
            attrs[c.ENDUSER_ID] = user_id
        if task_id is not None:  # a run started by kernel.tasks' runner
            attrs[c.TASK_ID] = task_id
            if task_queued_s is not None:
                attrs[c.TASK_QUEUED_S] = task_queued_s
            if task_attempt is not None:
                attrs[c.TASK_ATTEMPT] = task_attempt
        if release_name is not None:
            attrs[c.RELEASE_NAME] = str(release_name)
            if release_cohort is not None:
                attrs[c.RELEASE_COHORT] = _val(release_cohort)
        if primary is not None and primary.trace_id is not None:
            attrs[c.RELEASE_PRIMARY_TRACE_ID] = primary.trace_id
        if budget:
            for key, limit in budget.items():
                attr = _BUDGET_MAX_KEYS.get(key)
                if attr is not None and limit is not None:
                    attrs[attr] = limit
        if task is not None and (text := _state.policy().text(task)) is not None:
            attrs[c.RUN_TASK] = text
        _set(scope.span, attrs)
    return scope


# --------------------------------------------------------------------------------------------
# step, budget_check, truncate
# --------------------------------------------------------------------------------------------


class StepScope(SpanScope):
    """A step span; what kind of step it was is only known after the model answered (`record`)."""

    __slots__ = ()

    def record(
        self,
        *,
        kind: str,
        action: str | None = None,
        parse: str | None = None,
        thought: str | None = None,
        observation: str | None = None,
        guard_events: int = 0,
    ) -> None:
        """What the step turned out to be; `observation` is the text as the model saw it;
        `guard_events` how many loop-guard refusals it had (recorded when > 0)."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {c.STEP_KIND: _val(kind)}
        if guard_events:
            attrs[c.STEP_GUARD_EVENTS] = _int(guard_events)
        if action is not None:
            attrs[c.STEP_ACTION] = action
        if parse is not None:
            attrs[c.STEP_PARSE] = _val(parse)
        policy = _state.policy()
        if policy.capture:
            if thought is not None:
                attrs[c.STEP_THOUGHT] = policy.text(thought)
            if observation is not None:
                attrs[c.STEP_OBSERVATION] = policy.text(observation)
        _set(self.span, attrs)


def guard_event(
    *,
    rule: str,
    severity: str,
    message: str | None = None,
    tool_name: str | None = None,
    call_id: str | None = None,
    previous_step: int | None = None,
) -> None:
    """`steplens.loop_guard`: an event on the current span (the step) for one loop-guard refusal.
    `message` (what the model was told instead) is content."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attrs: dict[str, Any] = {c.GUARD_RULE: _val(rule), c.GUARD_SEVERITY: _val(severity)}
    if tool_name:
        attrs[c.GEN_AI_TOOL_NAME] = tool_name
    if call_id:
        attrs[c.GEN_AI_TOOL_CALL_ID] = call_id
    if previous_step is not None:
        attrs[c.GUARD_PREVIOUS_STEP] = _int(previous_step)
    if message is not None and (text := _state.policy().text(message)) is not None:
        attrs[c.GUARD_MESSAGE] = text
    span.add_event(c.EVENT_LOOP_GUARD, attrs, timestamp=stamp_ns())


def step_span(index: int, *, plan_version: int | None = None, plan_step_id: str | None = None) -> StepScope:
    """`step {index}`: one loop iteration."""
    scope = StepScope(_start(_STEP_PREFIX + str(index), _INTERNAL))
    if scope.recording:
        attrs: dict[str, Any] = {c.STEP_INDEX: index}
        if plan_version is not None:
            attrs[c.PLAN_VERSION] = plan_version
        if plan_step_id is not None:
            attrs[c.PLAN_STEP_ID] = plan_step_id
        _set(scope.span, attrs)
    return scope


def budget_check(
    *,
    used: Mapping[str, float | int],
    limits: Mapping[str, float | int | None],
    exhausted: str | None = None,
    headroom: float = 1.0,
) -> None:
    """`budget_check`: an instant span under the current step, one attribute pair per budget.

    used/limits are keyed by budget name (conventions.BUDGET_NAMES: steps, input_tokens, cost_usd,
    seconds); a None limit (unlimited) is left out. `exhausted` is the stop reason, or None.
    """
    span = _start(c.SPAN_BUDGET_CHECK, _INTERNAL)
    if span.is_recording():
        attrs: dict[str, Any] = {
            c.BUDGET_EXHAUSTED: _val(exhausted) if exhausted else "",
            c.BUDGET_HEADROOM: _float(headroom),
        }
        for name in c.BUDGET_NAMES:
            value = used.get(name)
            if value is not None:
                attrs[c.budget_used(name)] = value
            limit = limits.get(name)
            if limit is not None:
                attrs[c.budget_limit(name)] = limit
        _set(span, attrs)
    span.end(end_time=stamp_ns())


class TruncateScope(SpanScope):
    """Remembers the input size given at start so `finish` can derive the dropped tokens."""

    __slots__ = ("_input_tokens",)

    def __init__(self, span: Span, input_tokens: int | None) -> None:
        super().__init__(span)
        self._input_tokens = input_tokens

    def finish(
        self,
        *,
        output_tokens: int,
        truncated: bool | None = None,
        input_tokens: int | None = None,
        dropped_tokens: int | None = None,
    ) -> None:
        """The result. `input_tokens` here is for callers that only learn it while truncating (it
        wins over the one given at start); `dropped_tokens` defaults to input - output, but the
        truncator knows better when its marker itself costs tokens."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {}
        if input_tokens is not None:
            self._input_tokens = input_tokens
            attrs[c.TRUNCATE_INPUT_TOKENS] = _int(input_tokens)
        out, given = _int(output_tokens), _int(self._input_tokens)
        if dropped_tokens is not None:
            dropped = _int(dropped_tokens)
        else:
            dropped = max(0, given - out) if out is not None and given is not None else None
        if truncated is None:
            truncated = bool(dropped)
        attrs[c.TRUNCATE_OUTPUT_TOKENS] = out
        attrs[c.TRUNCATE_DROPPED_TOKENS] = dropped
        attrs[c.TRUNCATE_TRUNCATED] = bool(truncated)
        _set(self.span, attrs)


def truncate_span(*, limit_tokens: int, input_tokens: int | None = None) -> TruncateScope:
    """`truncate_observation`: fitting an observation into the context; finish with the result
    (give `input_tokens` here or to `finish`)."""
    scope = TruncateScope(_start(c.SPAN_TRUNCATE, _INTERNAL), input_tokens)
    if scope.recording:
        attrs: dict[str, Any] = {c.TRUNCATE_LIMIT_TOKENS: _int(limit_tokens)}
        if input_tokens is not None:
            attrs[c.TRUNCATE_INPUT_TOKENS] = _int(input_tokens)
        _set(scope.span, attrs)
    return scope


# --------------------------------------------------------------------------------------------
# compact_context (one per compaction of the prompt)
# --------------------------------------------------------------------------------------------


class CompactScope(SpanScope):
    """A compaction; what it achieved is known only when it ends (`finish`)."""

    __slots__ = ()

    def finish(self, *, tokens_before: int, tokens_after: int, dropped: Mapping[str, int], summarised: int) -> None:
        """Tokens of the whole prompt before/after, and how many items of each
        `conventions.CompactedKind` were shortened or dropped (every kind, zeros included)."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {
            c.COMPACT_TOKENS_BEFORE: _int(tokens_before),
            c.COMPACT_TOKENS_AFTER: _int(tokens_after),
            c.COMPACT_SUMMARISED: _int(summarised),
        }
        for kind, key in c.COMPACT_DROPPED.items():
            attrs[key] = _int(dropped.get(kind.value, 0))
        _set(self.span, attrs)


def compact_span(*, threshold_tokens: int) -> CompactScope:
    """`compact_context`: the prompt passed the watermark; a summariser's LLM calls nest under it."""
    scope = CompactScope(_start(c.SPAN_COMPACT, _INTERNAL))
    if scope.recording:
        _set(scope.span, {c.COMPACT_THRESHOLD_TOKENS: _int(threshold_tokens)})
    return scope


# --------------------------------------------------------------------------------------------
# chat (one per LLM attempt)
# --------------------------------------------------------------------------------------------


class ChatScope(SpanScope):
    """One LLM attempt. Keeps models, tokens and the error type because the GenAI metrics are
    recorded when the span ends, also when the span itself is not recording (sampled out)."""

    __slots__ = ("_error_type", "_input_tokens", "_output_tokens", "_provider", "_request_model",
                 "_response_model", "_t0")

    def __init__(self, span: Span, model: str, provider: str | None) -> None:
        super().__init__(span)
        self._t0 = time.perf_counter()
        self._request_model = model
        self._provider = provider
        self._response_model: str | None = None
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._error_type: str | None = None

    def record_response(
        self,
        *,
        response_model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        finish_reasons: Iterable[str] | None = None,
        estimated: bool = False,
        cost_usd: float | None = None,
        output_text: str | None = None,
        output_tool_calls: Iterable[Any] | None = None,
        response_id: str | None = None,
    ) -> None:
        """The attempt's result. `output_tool_calls` items need `id`, `name`, `arguments`."""
        self._response_model = response_model
        self._input_tokens = input_tokens
        self._output_tokens = output_tokens
        if not self.recording:
            return
        if isinstance(finish_reasons, str):
            finish_reasons = (finish_reasons,)
        reasons = [str(_val(r)) for r in finish_reasons] if finish_reasons is not None else None
        attrs: dict[str, Any] = {c.USAGE_ESTIMATED: bool(estimated)}
        if response_model:
            attrs[c.GEN_AI_RESPONSE_MODEL] = response_model
        if input_tokens is not None:
            attrs[c.GEN_AI_USAGE_INPUT_TOKENS] = _int(input_tokens)
        if output_tokens is not None:
            attrs[c.GEN_AI_USAGE_OUTPUT_TOKENS] = _int(output_tokens)
        if reasons:
            attrs[c.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
        if cost_usd is not None:
            attrs[c.COST_USD] = _float(cost_usd)
        if response_id:
            attrs[c.GEN_AI_RESPONSE_ID] = response_id
        policy = _state.policy()
        if policy.capture and (output_text is not None or output_tool_calls):
            calls = list(output_tool_calls or ())
            message = output_message(output_text, calls, reasons[0] if reasons else None)
            attrs[c.GEN_AI_OUTPUT_MESSAGES] = policy.json([message])
        _set(self.span, attrs)

    def fail(self, error_type: str, message: str | None = None) -> None:
        self._error_type = str(_val(error_type))
        super().fail(error_type, message)

    def _on_exit(self, exc: BaseException | None) -> None:
        if exc is not None and self._error_type is None:
            self._error_type = error_type_of(exc)
        _state.current.metrics.record(
            operation=c.OP_CHAT,
            provider=self._provider,
            request_model=self._request_model,
            response_model=self._response_model,
            duration_s=time.perf_counter() - self._t0,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            error_type=self._error_type,
        )


def chat_span(
    *,
    model: str,
    provider: str | None = None,
    attempt: int = 1,
    fallback_from: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    input_messages: Iterable[Any] | None = None,
    purpose: str | None = None,
    route_rule: str | None = None,
    route_model: str | None = None,
) -> ChatScope:
    """`chat {model}` (CLIENT): one LLM attempt. Messages: kernel `Message`s or OpenAI-shaped dicts.
    `purpose` is what the call is for (conventions.LLMPurpose); `route_rule`/`route_model` say which
    Router rule picked which model, so a trace shows why this model answered."""
    scope = ChatScope(_start(_CHAT_PREFIX + str(model), _CLIENT), model, provider)
    if scope.recording:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
            c.GEN_AI_REQUEST_MODEL: str(model),
            c.LLM_ATTEMPT: attempt,
        }
        if provider:
            attrs[c.GEN_AI_PROVIDER_NAME] = provider
        if fallback_from:
            attrs[c.LLM_FALLBACK_FROM] = fallback_from
        if temperature is not None:
            attrs[c.GEN_AI_REQUEST_TEMPERATURE] = _float(temperature)
        if max_tokens is not None:
            attrs[c.GEN_AI_REQUEST_MAX_TOKENS] = _int(max_tokens)
        if purpose:
            attrs[c.LLM_PURPOSE] = _val(purpose)
        if route_rule:
            attrs[c.LLM_ROUTE_RULE] = str(route_rule)
        if route_model:
            attrs[c.LLM_ROUTE_MODEL] = str(route_model)
        if input_messages is not None:
            policy = _state.policy()
            if policy.capture:
                attrs[c.GEN_AI_INPUT_MESSAGES] = policy.messages(input_messages)
        _set(scope.span, attrs)
    return scope


# --------------------------------------------------------------------------------------------
# execute_tool
# --------------------------------------------------------------------------------------------


class ToolScope(SpanScope):
    """A dispatch span; the policy's decision and the result exist only after dispatch (`finish`)."""

    __slots__ = ()

    def finish(
        self,
        *,
        decision: str = c.ToolDecision.EXECUTED,
        result: str | None = None,
        cost_usd: float | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """The dispatch outcome. An `error_type` (conventions.ToolErrorCode) marks the span ERROR."""
        if self.recording:
            attrs: dict[str, Any] = {c.TOOL_DECISION: _val(decision)}
            if cost_usd is not None:
                attrs[c.COST_USD] = _float(cost_usd)
            if result is not None and (text := _state.policy().text(result)) is not None:
                attrs[c.GEN_AI_TOOL_CALL_RESULT] = text
            _set(self.span, attrs)
        if error_type is not None:
            self.fail(error_type, error_message)


def tool_span(
    tool: str,
    *,
    call_id: str | None = None,
    side_effect: bool = False,
    risk: str | None = None,
    timeout_s: float | None = None,
    arguments: Any = None,
    mcp_server: str | None = None,
    mcp_transport: str | None = None,
    mcp_protocol_version: str | None = None,
    server_address: str | None = None,
    server_port: int | None = None,
) -> ToolScope:
    """`execute_tool {tool}`: one dispatch. `arguments` (dict or JSON string) is content.

    mcp_*: set for a tool an MCP server answers; the span then also carries the OTel MCP
    attributes (`mcp.method.name=tools/call`, protocol version, `network.transport`, and for
    HTTP `network.protocol.name`, `server.address`, `server.port`)."""
    scope = ToolScope(_start(_TOOL_PREFIX + str(tool), _INTERNAL))
    if scope.recording:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
            c.GEN_AI_TOOL_NAME: tool,
            c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_FUNCTION,
            c.TOOL_SIDE_EFFECT: bool(side_effect),
        }
        if call_id:
            attrs[c.GEN_AI_TOOL_CALL_ID] = call_id
        if risk is not None:
            attrs[c.TOOL_RISK] = _val(risk)
        if timeout_s is not None:
            attrs[c.TOOL_TIMEOUT_S] = _float(timeout_s)
        if arguments is not None and (text := _state.policy().json(arguments)) is not None:
            attrs[c.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        if mcp_server is not None:
            attrs.update(_mcp_attributes(mcp_server, mcp_transport, mcp_protocol_version, server_address, server_port))
        _set(scope.span, attrs)
    return scope


def _mcp_attributes(
    server: str, transport: str | None, protocol_version: str | None, address: str | None, port: int | None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {c.TOOL_MCP_SERVER: str(server), c.MCP_METHOD_NAME: c.MCP_METHOD_TOOLS_CALL}
    if transport is not None:
        attrs[c.TOOL_MCP_TRANSPORT] = _val(transport)
        network = c.MCP_NETWORK_TRANSPORT.get(_val(transport))
        if network is not None:
            attrs[c.NETWORK_TRANSPORT] = network
        if _val(transport) == c.McpTransport.STREAMABLE_HTTP:
            attrs[c.NETWORK_PROTOCOL_NAME] = c.NETWORK_PROTOCOL_HTTP
    if protocol_version:
        attrs[c.MCP_PROTOCOL_VERSION] = protocol_version
    if address:
        attrs[c.SERVER_ADDRESS] = address
    if port is not None:
        attrs[c.SERVER_PORT] = _int(port)
    return attrs


# --------------------------------------------------------------------------------------------
# plan / replan (plan-and-execute)
# --------------------------------------------------------------------------------------------


class PlanScope(SpanScope):
    """The first plan; its version and size are recorded once the planner's reply was accepted."""

    __slots__ = ()

    def record(self, *, version: int, steps: int) -> None:
        if self.recording:
            _set(self.span, {c.PLAN_VERSION: _int(version), c.PLAN_STEPS: _int(steps)})


def plan_span(agent: str) -> PlanScope:
    """`plan {agent}`: producing the first plan (its chat spans nest inside)."""
    scope = PlanScope(_start(_PLAN_PREFIX + str(agent), _INTERNAL))
    if scope.recording:
        _set(scope.span, {c.GEN_AI_OPERATION_NAME: c.OP_PLAN, c.GEN_AI_AGENT_NAME: str(agent)})
    return scope


class ReplanScope(SpanScope):
    """A replan; the verdict (admitted or which guard refused it) is recorded when it is reached."""

    __slots__ = ()

    def record(
        self,
        *,
        verdict: str,
        to_version: int | None = None,
        steps: int | None = None,
        reexecution_cost_usd: float | None = None,
    ) -> None:
        if not self.recording:
            return
        attrs: dict[str, Any] = {c.REPLAN_VERDICT: _val(verdict)}
        if to_version is not None:
            attrs[c.REPLAN_TO_VERSION] = to_version
            attrs[c.PLAN_VERSION] = to_version
        if steps is not None:
            attrs[c.PLAN_STEPS] = steps
        if reexecution_cost_usd is not None:
            attrs[c.REPLAN_REEXECUTION_COST_USD] = _float(reexecution_cost_usd)
        _set(self.span, attrs)

    def record_context(
        self,
        *,
        route_rule: str,
        escalated: bool,
        escalation_reset: bool,
        lessons: Sequence[str],
        variables: Mapping[str, int],
        tool_calls: int,
        budget_used_tokens: int,
    ) -> None:
        """What the replanner was given: the router's decision, the lesson book (content), the
        variable table's health counts, the evidence and budget the gates looked at."""
        if not self.recording:
            return
        attrs: dict[str, Any] = {
            c.REPLAN_ROUTE_RULE: _val(route_rule),
            c.REPLAN_ROUTE_ESCALATED: bool(escalated),
            c.REPLAN_VARIABLES_CLEAN: _int(variables.get("clean", 0)),
            c.REPLAN_VARIABLES_STALE: _int(variables.get("stale", 0)),
            c.REPLAN_VARIABLES_VOID: _int(variables.get("void", 0)),
            c.REPLAN_TOOL_CALLS: _int(tool_calls),
            c.REPLAN_BUDGET_USED_TOKENS: _int(budget_used_tokens),
        }
        if escalation_reset:
            attrs[c.REPLAN_ESCALATION_RESET] = True
        policy = _state.policy()
        texts = [t for t in (policy.text(x) for x in lessons) if t is not None]
        if texts:
            attrs[c.REPLAN_LESSONS] = texts
        _set(self.span, attrs)

    def record_steps(self, *, kept: Sequence[str], dropped: Sequence[str], added: Sequence[str]) -> None:
        """What the new version changed: step ids kept, dropped and added (ids, never content)."""
        if self.recording:
            self.span.set_attributes({c.REPLAN_KEPT: [str(x) for x in kept],
                                      c.REPLAN_DROPPED: [str(x) for x in dropped],
                                      c.REPLAN_ADDED: [str(x) for x in added]})

    def refused(self, verdict: str, reason: str) -> None:
        """A breaker, gate or guard said no: the reason as an attribute and a `steplens.replan_guard`
        event (the reason names limits and counts, never content)."""
        if not self.recording:
            return
        reason = _state.policy().short(reason)
        self.span.set_attribute(c.REPLAN_REFUSAL, reason)
        self.span.add_event(c.EVENT_REPLAN_GUARD, {c.REPLAN_GUARD_RULE: _val(verdict), c.REPLAN_GUARD_REASON: reason},
                            timestamp=stamp_ns())


def replan_span(
    agent: str,
    *,
    granularity: str,
    from_version: int,
    cause: str | None = None,
    failed_step: str | None = None,
) -> ReplanScope:
    """`replan {agent}`: repairing the plan after a failed step; record the verdict."""
    scope = ReplanScope(_start(_REPLAN_PREFIX + str(agent), _INTERNAL))
    if scope.recording:
        attrs: dict[str, Any] = {
            c.GEN_AI_AGENT_NAME: agent,
            c.REPLAN_GRANULARITY: _val(granularity),
            c.REPLAN_FROM_VERSION: from_version,
        }
        if cause is not None:
            attrs[c.REPLAN_CAUSE] = cause
        if failed_step is not None:
            attrs[c.REPLAN_FAILED_STEP] = failed_step
        _set(scope.span, attrs)
    return scope


def recording_possible(*, metrics: bool = False) -> bool:
    """False when nothing is set up (no handle, no global SDK provider): no span could record, so
    a caller may skip the helper call entirely. Chat spans also feed the GenAI metrics: pass
    `metrics=True` there, which stays True while a global meter provider is configured."""
    return _state.recording_possible() or (metrics and _state.metrics_possible())


def current_trace_id() -> str | None:
    """The current trace id as hex (None outside any valid span)."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


# --------------------------------------------------------------------------------------------
# long-term memory (search_memory / upsert_memory) and big observations on execute_tool
# --------------------------------------------------------------------------------------------


class MemoryScope(SpanScope):
    """A memory operation; a recall records what it found and what the injection cap left out."""

    __slots__ = ()

    def record_recall(self, *, candidates: int, injected: int, capped: int, injected_chars: int) -> None:
        if self.recording:
            _set(self.span, {
                c.MEMORY_CANDIDATES: _int(candidates),
                c.GEN_AI_MEMORY_SEARCH_RESULT_COUNT: _int(injected),
                c.MEMORY_CAPPED: _int(capped),
                c.MEMORY_INJECTED_CHARS: _int(injected_chars),
            })  # fmt: skip


def memory_span(
    operation: str, *, store: str, scope: str, query: str | None = None, key: str | None = None,
    content: str | None = None,
) -> MemoryScope:
    """`search_memory {store}` or `upsert_memory {store}` (GenAI memory operations). `query` and
    `content` are content (capture switch, redaction, size cap)."""
    span = MemoryScope(_start(c.SPAN_MEMORY.format(operation=operation, store=store), _INTERNAL))
    if span.recording:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: operation,
            c.GEN_AI_MEMORY_STORE_NAME: str(store),
            c.GEN_AI_MEMORY_SCOPE: str(scope),
        }
        if key is not None:
            attrs[c.GEN_AI_MEMORY_ID] = str(key)
        if query is not None and (text := _state.policy().text(query)) is not None:
            attrs[c.GEN_AI_MEMORY_QUERY] = text
        if content is not None and (text := _state.policy().text(content)) is not None:
            attrs[c.GEN_AI_MEMORY_CONTENT] = text
        _set(span.span, attrs)
    return span


def record_saved_aside(scope: ToolScope, *, size_chars: int, shown_chars: int, ref: str) -> None:
    """On an `execute_tool` span: the result was over the size limit and saved aside for the run."""
    if scope.recording:
        _set(scope.span, {
            c.TOOL_RESULT_SIZE_CHARS: _int(size_chars),
            c.TOOL_RESULT_SHOWN_CHARS: _int(shown_chars),
            c.TOOL_RESULT_SAVED_ASIDE: True,
            c.TOOL_RESULT_REF: str(ref),
        })  # fmt: skip
