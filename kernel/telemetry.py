"""The one bridge from kernel objects to `tracer.spans` (the span contract of design.md §2).

Why a bridge: the loop in `kernel/agent.py` should read as a loop, with a few `with` lines where a
span begins, while the mapping "StepRecord / Observation / BudgetCheck / LLMResponse → attributes"
lives in one place that a reader of the contract can check line by line. The arrow stays
kernel → tracer; the tracer never sees a kernel type.

Two promises hold for every function here:
- Tracing off costs almost nothing: without `tracer.setup()` (or a global provider) the tracer's
  helpers get the OTel no-op tracer, build no attributes and attach no context. `tracing_disabled()`
  skips even that (benchmarks use it as the "untraced" baseline; apps that install a global OTel
  provider for other reasons can use it to keep agent runs out of their traces).
- Tracing never changes a run: mapping bugs are logged with a traceback and swallowed, and an
  exception of the run passes through the span (recorded on it) unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.budgets import BudgetCheck
from kernel.context import CompactionReport
from kernel.llm.base import describe
from kernel.llm.estimate import estimate_usage
from kernel.llm.scope import (
    AttemptRequest,
    NullAttemptScope,
    call_labels,
    current_attempt_request,
    current_call_labels,
)
from kernel.truncation import Truncation, truncate_observation
from kernel.types import GuardEvent, LLMResponse, Message, Observation, RunResult, StepRecord, ToolCall
from tracer import conventions as c
from tracer import spans
from tracer.conventions import RunMode, StepKind, StopReason, ToolErrorCode
from tracer.pricing import cost_usd

if TYPE_CHECKING:
    from kernel.agent import Agent
    from kernel.llm.base import LLM
    from kernel.tools import Tool

log = logging.getLogger(__name__)

_ENABLED: ContextVar[bool] = ContextVar("steplens_kernel_tracing", default=True)
_NULL_ATTEMPT = NullAttemptScope()
_MAX_UNKNOWN_NAME = 64
_BUDGET_FIELDS = (
    "max_steps", "max_input_tokens", "max_output_tokens", "max_cost_usd", "max_seconds",
    "max_consecutive_errors", "max_consecutive_unparsable",
)


def _on() -> bool:
    """Spans are worth building: not disabled, and something could record them."""
    return _ENABLED.get() and spans.recording_possible()


def _chat_on() -> bool:
    """As `_on`, but chat spans also feed the GenAI metrics, which have their own provider."""
    return _ENABLED.get() and spans.recording_possible(metrics=True)


@contextmanager
def tracing_disabled() -> Iterator[None]:
    """Runs started inside emit no spans at all, whatever provider is installed (per task/thread)."""
    token = _ENABLED.set(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)


# --------------------------------------------------------------------------------------------
# run labels: what the caller knows about a run that the agent cannot (eval ids, mode)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunLabels:
    """Labels for the runs started inside `run_labels(...)`; None fields fall back to defaults."""

    mode: RunMode | None = None
    eval_run_id: str | None = None
    eval_case_id: str | None = None
    # Set by kernel.tasks' runner around the run it starts for a task.
    task_id: str | None = None
    task_queued_s: float | None = None
    task_attempt: int | None = None


_LABELS: ContextVar[RunLabels | None] = ContextVar("steplens_run_labels", default=None)


@contextmanager
def run_labels(
    *, mode: RunMode | str | None = None, eval_run_id: str | None = None, eval_case_id: str | None = None,
    task_id: str | None = None, task_queued_s: float | None = None, task_attempt: int | None = None,
) -> Iterator[RunLabels]:
    """Label the runs started inside: an eval harness wraps `agent.run` in this so the run span
    carries `steplens.eval.run_id`/`case_id` and mode `eval` without the Agent API knowing evals."""
    if mode is None and (eval_run_id is not None or eval_case_id is not None):
        mode = RunMode.EVAL
    labels = RunLabels(RunMode(mode) if mode is not None else None, eval_run_id, eval_case_id,
                       task_id, task_queued_s, task_attempt)
    token = _LABELS.set(labels)
    try:
        yield labels
    finally:
        _LABELS.reset(token)


@dataclass
class ReleaseTag:
    """The gray release a run is routed by (kernel.release). Claimed by the first run span started
    inside `release_tag(...)` (a sub-agent that run calls is not the release's run); that span's
    `ref` is kept so a shadow run can link to it."""

    name: str
    cohort: str
    primary: spans.RunRef | None = None  # a shadow's: the live run it mirrors
    ref: spans.RunRef | None = None  # set when the run span starts
    claimed: bool = False


_RELEASE: ContextVar[ReleaseTag | None] = ContextVar("steplens_release_tag", default=None)


@contextmanager
def release_tag(tag: ReleaseTag) -> Iterator[ReleaseTag]:
    """The next run started inside carries `steplens.release.name` / `.cohort` (and, for a shadow,
    a link to its primary run)."""
    token = _RELEASE.set(tag)
    try:
        yield tag
    finally:
        _RELEASE.reset(token)


def _claim_release() -> ReleaseTag | None:
    tag = _RELEASE.get()
    if tag is None or tag.claimed:
        return None
    tag.claimed = True
    return tag


def _mode_of(agent: Agent, labels: RunLabels | None) -> RunMode:
    if labels is not None and labels.mode is not None:
        return labels.mode
    from kernel.llm.replay import REPLAY_PROVIDER
    from kernel.policy import Shadow, active_shadow

    if isinstance(agent.policy, Shadow) or active_shadow() is not None:
        return RunMode.SHADOW
    if describe(agent.llm)[1] == REPLAY_PROVIDER:
        return RunMode.REPLAY
    return RunMode.LIVE


# --------------------------------------------------------------------------------------------
# exceptions that end a run inside a span
# --------------------------------------------------------------------------------------------


def _stop_of(exc: BaseException | None) -> tuple[StopReason, str] | None:
    """(stop reason, detail) for the loop's stop signal or a task cancellation; None otherwise
    (a real exception, which the span records with its class and stack trace)."""
    if exc is None:
        return None
    reason = getattr(exc, "reason", None)
    if isinstance(reason, StopReason):
        return reason, str(getattr(exc, "detail", None) or reason.value)
    if isinstance(exc, asyncio.CancelledError):
        return StopReason.CANCELLED, "the run's task was cancelled"
    return None


class _Traced:
    """A `with` wrapper around one tracer scope that can never raise into the kernel."""

    __slots__ = ("_scope",)

    def __init__(self, scope: spans.SpanScope | None) -> None:
        self._scope = scope

    def __enter__(self) -> Any:
        if self._scope is not None:
            try:
                self._scope.__enter__()
            except Exception:
                log.warning("steplens: could not enter a span; the run continues untraced", exc_info=True)
                self._scope = None
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        scope = self._scope
        if scope is None:
            return False
        try:
            self._on_exit(scope, exc)
        except Exception:
            log.warning("steplens: recording a span's outcome failed", exc_info=True)
        scope.__exit__(exc_type, exc, tb)  # SpanScope.__exit__ itself never raises
        return False

    def _on_exit(self, scope: spans.SpanScope, exc: BaseException | None) -> None:
        stop = _stop_of(exc)
        if stop is not None:
            scope.fail(stop[0], stop[1])

    @property
    def trace_id(self) -> str | None:
        return self._scope.trace_id if self._scope is not None else None


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


class RunTrace(_Traced):
    """`invoke_agent {agent}`. `finish(result)` records the outcome; `trace_id` is RunResult's."""

    __slots__ = ()

    def finish(self, result: RunResult) -> None:
        scope = self._scope
        if scope is None or not scope.recording:
            return
        try:
            scope.finish(
                ok=result.ok,
                stop_reason=result.stop_reason,
                steps=len(result.steps),
                input_tokens=result.usage.input_tokens,
                output_tokens=result.usage.output_tokens,
                cost_usd=result.cost_usd,
                answer=result.answer,
                error=result.error,
                handoff_reason=result.handoff.reason if result.handoff else None,
                handoff_target=result.handoff.target if result.handoff else None,
            )
        except Exception:
            log.warning("steplens: recording the run's outcome failed", exc_info=True)

    def _on_exit(self, scope: spans.SpanScope, exc: BaseException | None) -> None:
        return None  # Agent.run never raises; its outcome arrives through finish()


def run_span(agent: Agent, task: Any, conversation_id: str | None, user_id: str | None) -> RunTrace:
    """The run span; the caller's current span (e.g. a web request) becomes its parent."""
    if not _on():
        return RunTrace(None)
    try:
        labels = _LABELS.get()
        release = _claim_release()
        budget = agent.budget
        scope = spans.run_span(
            agent.name,
            agent_version=agent.version,
            agent_id=agent.agent_id,
            conversation_id=conversation_id,
            model=describe(agent.llm)[0],
            mode=_mode_of(agent, labels),
            budget={name: getattr(budget, name) for name in _BUDGET_FIELDS},
            task=task,
            eval_run_id=labels.eval_run_id if labels else None,
            eval_case_id=labels.eval_case_id if labels else None,
            user_id=user_id,
            release_name=release.name if release else None,
            release_cohort=release.cohort if release else None,
            primary=release.primary if release else None,
            task_id=labels.task_id if labels else None,
            task_queued_s=labels.task_queued_s if labels else None,
            task_attempt=labels.task_attempt if labels else None,
        )
        if release is not None:
            release.ref = scope.ref()
        return RunTrace(scope)
    except Exception:
        log.warning("steplens: could not start the run span; the run continues untraced", exc_info=True)
        return RunTrace(None)


# --------------------------------------------------------------------------------------------
# step and budget_check
# --------------------------------------------------------------------------------------------


def _action(record: StepRecord) -> str | None:
    """Tool name(s) or `finish`; a format error has none (the model named nothing usable)."""
    if record.calls:
        return ",".join(dict.fromkeys(call.name for call in record.calls))
    if record.kind == StepKind.FINISH or record.answer is not None:
        return c.ACTION_FINISH
    return None


class StepTrace(_Traced):
    """`step {i}`: on exit, records the StepRecord the loop appended for this index (if any)."""

    __slots__ = ("_index", "_steps")

    def __init__(self, scope: spans.StepScope | None, index: int, steps: Sequence[StepRecord]) -> None:
        super().__init__(scope)
        self._index = index
        self._steps = steps

    def _on_exit(self, scope: spans.SpanScope, exc: BaseException | None) -> None:
        if scope.recording and self._steps and self._steps[-1].index == self._index:
            record = self._steps[-1]
            scope.record(  # type: ignore[attr-defined]
                kind=record.kind,
                action=_action(record),
                parse=record.parse,
                thought=record.thought,
                observation=record.observation_text,
                guard_events=len(record.guard_events),
            )
        super()._on_exit(scope, exc)  # a stop inside the step: ERROR, error.type = stop reason


def step_span(index: int, steps: Sequence[StepRecord]) -> StepTrace:
    """`steps` is the run's list of records; the one with `index` is read when the step ends."""
    if not _on():
        return StepTrace(None, index, steps)
    return StepTrace(spans.step_span(index), index, steps)


_COUNTED = frozenset({"steps", "input_tokens"})


def _num(name: str, value: float | None) -> float | int | None:
    """Counts stay integers on the span (BudgetLine keeps every quantity as a float)."""
    return int(value) if value is not None and name in _COUNTED else value


def budget_check(check: BudgetCheck) -> None:
    """The `budget_check` span for a snapshot (under the current step, or the run when exhausted)."""
    if not _on():
        return
    try:
        spans.budget_check(
            used={name: _num(name, check.line(name).used) for name in c.BUDGET_NAMES},
            limits={name: _num(name, check.line(name).limit) for name in c.BUDGET_NAMES},
            exhausted=check.exhausted,
            headroom=check.headroom,
        )
    except Exception:
        log.warning("steplens: could not record the budget check", exc_info=True)


# --------------------------------------------------------------------------------------------
# chat: one span per LLM attempt
# --------------------------------------------------------------------------------------------


class ChatAttempt(_Traced):
    """`chat {model}` around one attempt; also the `AttemptScope` ResilientLLM records into.

    A failed attempt is recorded by the exception leaving the `with` block (error.type = the
    LLMError's code or the exception class, status ERROR, an exception event)."""

    __slots__ = ("_model", "_request")

    def __init__(self, scope: spans.ChatScope | None, model: str, request: AttemptRequest | None) -> None:
        super().__init__(scope)
        self._model = model
        self._request = request

    def record_request(self, **_: Any) -> None:
        """Taken from the AttemptRequest when the span opened (the span needs it at start)."""

    def record_error(self, exc: BaseException) -> None:
        """The exception also leaves the `with` block, where the span records it."""

    def record_response(self, resp: LLMResponse) -> None:
        scope: spans.ChatScope | None = self._scope  # type: ignore[assignment]
        if scope is None:
            return
        try:
            if not isinstance(resp, LLMResponse):
                scope.fail("TypeError", f"LLM returned {type(resp).__name__}, not LLMResponse")
                return
            usage = resp.usage
            if usage is None:
                req = self._request
                usage = estimate_usage(req.messages if req else [], req.tools if req else None, resp)
            if not scope.recording:  # tokens still feed the GenAI metrics
                scope.record_response(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
                return
            model = resp.model or self._model
            price = cost_usd(model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
            scope.record_response(
                response_model=resp.model or None,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                finish_reasons=[resp.finish_reason] if resp.finish_reason else None,
                estimated=usage.estimated,
                cost_usd=price,
                output_text=resp.text,
                output_tool_calls=resp.tool_calls,
            )
        except Exception:
            log.warning("steplens: could not record an LLM response on its span", exc_info=True)

    def _on_exit(self, scope: spans.SpanScope, exc: BaseException | None) -> None:
        if isinstance(exc, asyncio.CancelledError):
            # The run's wall clock or cancel event interrupted the call: say so, not a stack trace.
            scope.fail("cancelled", "the LLM call was interrupted by the run's timeout or cancellation")


def _open_chat(
    *, model: str, provider: str, attempt: int, fallback_from: str | None, request: AttemptRequest | None
) -> ChatAttempt:
    labels = current_call_labels()
    try:
        scope = spans.chat_span(
            model=model,
            provider=provider,
            attempt=attempt,
            fallback_from=fallback_from,
            temperature=request.temperature if request else None,
            max_tokens=request.max_tokens if request else None,
            input_messages=request.messages if request else None,
            purpose=labels.purpose,
            route_rule=labels.route_rule,
            route_model=labels.route_model,
        )
    except Exception:
        log.warning("steplens: could not start a chat span", exc_info=True)
        scope = None
    return ChatAttempt(scope, model, request)


def chat_attempt(
    *, model: str, provider: str, attempt: int, fallback_from: str | None
) -> AbstractContextManager[Any]:
    """ResilientLLM's default `attempt_scope`: reads the request from `current_attempt_request()`."""
    if not _chat_on():
        return nullcontext(_NULL_ATTEMPT)
    return _open_chat(model=model, provider=provider, attempt=attempt, fallback_from=fallback_from,
                      request=current_attempt_request())


async def complete(
    llm: LLM,
    messages: list[Message],
    tools: list[dict] | None,
    *,
    temperature: float | None,
    max_tokens: int | None,
    purpose: str = c.LLMPurpose.STEP,
) -> LLMResponse:
    """`llm.complete(...)`, in one chat span unless the LLM opens its own per attempt
    (`emits_chat_spans`, e.g. ResilientLLM): a plain adapter still gets one span per call.

    `purpose` (conventions.LLMPurpose) goes on every chat span of the call, and to the LLM itself
    when it routes on it (`routes_by_purpose`, e.g. Router); plain adapters never see it, so the
    `LLM` protocol stays what it is."""
    kwargs: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
    if getattr(llm, "routes_by_purpose", False):
        kwargs["purpose"] = str(purpose)
    with call_labels(purpose=str(purpose)):
        if getattr(llm, "emits_chat_spans", False) or not _chat_on():
            return await llm.complete(messages, tools, **kwargs)
        model, provider = describe(llm)
        request = AttemptRequest(messages, tools, temperature, max_tokens)
        with _open_chat(model=model, provider=provider, attempt=1, fallback_from=None, request=request) as chat:
            response = await llm.complete(messages, tools, **kwargs)
            chat.record_response(response)
        return response


# --------------------------------------------------------------------------------------------
# execute_tool
# --------------------------------------------------------------------------------------------


class ToolTrace(_Traced):
    """`execute_tool {tool}`: `finish(obs)` maps the observation (decision, cost, error)."""

    __slots__ = ("_priced",)

    def __init__(self, scope: spans.ToolScope | None, priced: bool) -> None:
        super().__init__(scope)
        self._priced = priced

    def finish(self, obs: Observation) -> None:
        scope: spans.ToolScope | None = self._scope  # type: ignore[assignment]
        if scope is None:
            return
        try:
            err = obs.error
            scope.finish(
                decision=obs.decision,
                result=obs.content,
                cost_usd=obs.cost_usd if self._priced else None,
                error_type=err.error if err is not None else None,
                error_message=err.message if err is not None else None,
            )
        except Exception:
            log.warning("steplens: could not record a tool outcome on its span", exc_info=True)

    def _on_exit(self, scope: spans.SpanScope, exc: BaseException | None) -> None:
        stop = _stop_of(exc)
        if stop is None:
            return
        reason, detail = stop
        if reason == StopReason.TIMEOUT:
            # The run's wall clock ran out while the tool ran: for the tool that is a timeout.
            scope.fail(ToolErrorCode.TIMEOUT, detail)
        else:
            # Cancelled with its run: not a tool failure (tool error.type is a closed set).
            scope.cancelled(detail or reason.value)


def tool_span(tool: Tool | None, call: ToolCall) -> ToolTrace:
    """One dispatch of `call`; `tool` is the registry's tool (None for an unknown name)."""
    if not _on():
        return ToolTrace(None, False)
    try:
        origin = tool.origin if tool is not None else None
        remote: dict[str, Any] = {}
        if origin is not None:
            remote = {
                "mcp_server": origin.mcp_server,
                "mcp_transport": origin.mcp_transport,
                "mcp_protocol_version": origin.mcp_protocol_version,
                "server_address": origin.server_address,
                "server_port": origin.server_port,
            }
        scope = spans.tool_span(
            # A name no tool has is the model's free text: bounded like a valid name (64 chars).
            call.name if tool is not None else call.name[:_MAX_UNKNOWN_NAME],
            call_id=call.id,
            side_effect=tool.side_effect if tool is not None else False,
            risk=tool.risk if tool is not None else None,
            timeout_s=tool.timeout_s if tool is not None else None,
            arguments=call.arguments,
            **remote,
        )
    except Exception:
        log.warning("steplens: could not start a tool span", exc_info=True)
        return ToolTrace(None, False)
    return ToolTrace(scope, tool is not None and tool.price_usd is not None)


def guard_event(event: GuardEvent) -> None:
    """A loop-guard refusal: an event on the current step span (design.md §2). Deliberately not
    an `execute_tool` span: nothing was dispatched, so no tool call, error or denial is counted."""
    if not _on():
        return
    try:
        spans.guard_event(
            rule=event.rule,
            severity=event.severity,
            message=event.message,
            tool_name=event.tool_name[:_MAX_UNKNOWN_NAME] if event.tool_name else None,
            call_id=event.tool_call_id,
            previous_step=event.previous_step,
        )
    except Exception:
        log.warning("steplens: could not record a loop-guard event", exc_info=True)


# --------------------------------------------------------------------------------------------
# compact_context
# --------------------------------------------------------------------------------------------


class CompactTrace(_Traced):
    """`compact_context`: `finish(report)` records tokens before/after and counts per kind."""

    __slots__ = ()

    def finish(self, report: CompactionReport | None) -> None:
        scope: spans.CompactScope | None = self._scope  # type: ignore[assignment]
        if scope is None or report is None:
            return
        try:
            scope.finish(tokens_before=report.tokens_before, tokens_after=report.tokens_after,
                         dropped=report.counts(), summarised=report.summarised)
        except Exception:
            log.warning("steplens: could not record a compaction on its span", exc_info=True)


def compact_span(threshold_tokens: int) -> CompactTrace:
    """One compaction of the prompt, under the current step; a summariser's chat spans nest in it."""
    if not _on():
        return CompactTrace(None)
    try:
        return CompactTrace(spans.compact_span(threshold_tokens=threshold_tokens))
    except Exception:
        log.warning("steplens: could not start a compaction span", exc_info=True)
        return CompactTrace(None)


# --------------------------------------------------------------------------------------------
# truncate_observation
# --------------------------------------------------------------------------------------------


def truncate(text: str, limit_tokens: int) -> Truncation:
    """`truncate_observation(text, limit_tokens)` inside its span (one per executed call)."""
    if not _on():
        return truncate_observation(text, limit_tokens)
    with _Traced(spans.truncate_span(limit_tokens=limit_tokens)) as traced:
        cut = truncate_observation(text, limit_tokens)
        scope: spans.TruncateScope | None = traced._scope
        if scope is not None:
            scope.finish(output_tokens=cut.output_tokens, truncated=cut.truncated,
                         input_tokens=cut.input_tokens, dropped_tokens=cut.dropped_tokens)
    return cut


# --------------------------------------------------------------------------------------------
# long-term memory (kernel/memory.py) and big observations (kernel/observations.py)
# --------------------------------------------------------------------------------------------


class MemoryTrace(_Traced):
    """`search_memory {store}` / `upsert_memory {store}`; a recall's outcome via `record_recall`."""

    __slots__ = ()

    def record_recall(self, recall: Any) -> None:
        scope: spans.MemoryScope | None = self._scope  # type: ignore[assignment]
        if scope is None:
            return
        try:
            scope.record_recall(
                candidates=recall.candidates,
                injected=len(recall.memories),
                capped=recall.capped,
                injected_chars=len(recall.as_context()),
            )
        except Exception:
            log.warning("steplens: could not record a memory recall on its span", exc_info=True)


_MEMORY_OPS = {"search": c.OP_SEARCH_MEMORY, "upsert": c.OP_UPSERT_MEMORY}


def memory_span(
    operation: str, store: str, scope: str, *, query: str | None = None, key: str | None = None,
    content: str | None = None,
) -> MemoryTrace:
    """One memory operation ("search" or "upsert") on `store` for `scope`."""
    if not _on():
        return MemoryTrace(None)
    try:
        span = spans.memory_span(_MEMORY_OPS[operation], store=store, scope=scope, query=query, key=key,
                                 content=content)
    except Exception:
        log.warning("steplens: could not start a memory span", exc_info=True)
        return MemoryTrace(None)
    return MemoryTrace(span)


def saved_aside(trace: ToolTrace, *, size_chars: int, shown_chars: int, ref: str) -> None:
    """Mark a tool span's result as saved aside (the model saw `shown_chars` of `size_chars`)."""
    scope: spans.ToolScope | None = trace._scope  # type: ignore[assignment]
    if scope is None:
        return
    try:
        spans.record_saved_aside(scope, size_chars=size_chars, shown_chars=shown_chars, ref=ref)
    except Exception:
        log.warning("steplens: could not record a saved-aside result on its tool span", exc_info=True)
