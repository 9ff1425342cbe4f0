"""The ReAct loop: ask the model, run the tools it asks for, show it the results, repeat.

Design rules this module keeps:
- `Agent.run` never raises and never crashes on model output. Every run ends with an explicit
  `ok` and a `stop_reason` from the closed `StopReason` set; only `finish` is ok, and a run that
  hits a limit keeps `answer=None` (no half answer dressed up as success).
- Limits are hard: `BudgetTracker.check()` runs before every LLM call, and the wall-clock part is
  also enforced *during* a hanging LLM call or tool, as is the caller's cancel event.
- Each unit a span wraps is its own small method with its data at hand: `run` (the run), the
  step in `_loop`, `_budget_check`, `_call_llm`, `_dispatch_tool`, `_truncate`. The mapping to
  span attributes lives in `kernel.telemetry`, so the loop only gains a few `with` lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from kernel import telemetry
from kernel.budgets import Budget, BudgetCheck, BudgetTracker
from kernel.context import Compaction, Context, ContextPolicy, Summariser
from kernel.defaults import OBSERVATION_MAX_TOKENS, SYSTEM_PROMPT
from kernel.dispatch import dispatch
from kernel.handoff import HandoffPolicy, hand_off
from kernel.llm import LLM, LLMError, estimate_usage
from kernel.llm.base import describe
from kernel.loop_guard import LoopGuard, LoopGuardSession
from kernel.memory import LongTermMemory, memory_scope
from kernel.observations import READ_TOOL_NAME, BigObservations, ObservationStore
from kernel.parsing import EXPECTED_FORMAT, ParsedOutput, parse_response
from kernel.policy import SideEffectPolicy
from kernel.summarise import accounted_by
from kernel.tools import Tool, ToolRegistry
from kernel.truncation import Truncation
from kernel.types import GuardEvent, LLMResponse, Message, Observation, RunResult, StepRecord, ToolCall, Usage
from tracer.conventions import GuardRule, LLMPurpose, ParseStatus, StepKind, StopReason, ToolDecision
from tracer.pricing import cost_usd

log = logging.getLogger(__name__)

T = TypeVar("T")
# The memory scope of the run in progress, read by the shared `remember` tool (set per run in `_run`).
_RUN_MEMORY_SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("steplens_memory_scope", default=None)
Mode = Literal["text", "function_calling"]

# The documents' three-part thought and evidence rules (kernel.defaults says why).
DEFAULT_SYSTEM_PROMPT = SYSTEM_PROMPT

FUNCTION_CALLING_FORMAT = (
    "Call a tool through the tool-calling interface with arguments that are a valid JSON object "
    "matching its schema, or reply with plain text (no tool call) to give the final answer."
)


# Steps that executed no tool and so brought the model no new information.
_EMPTY_ROUND_KINDS = frozenset({StepKind.FORMAT_ERROR, StepKind.LOOP_GUARD})


class _Stop(Exception):  # noqa: N818 - control flow, not an error
    """Ends the run with a stop reason; raised from anywhere in the loop, caught in `run`."""

    def __init__(self, reason: StopReason, detail: str | None = None) -> None:
        super().__init__(detail or reason.value)
        self.reason = reason
        self.detail = detail


@dataclass
class LLMCall:
    """One LLM call as the loop accounted it: what a `chat` span records."""

    response: LLMResponse
    usage: Usage
    cost_usd: float
    model: str
    provider: str
    max_tokens: int | None


@dataclass
class RunState:
    """Everything one run accumulates; a tracer reads its spans' attributes from here."""

    task: str
    conversation_id: str | None
    user_id: str | None
    cancel: asyncio.Event | None
    budget: BudgetTracker
    guard: LoopGuardSession
    context: Context
    started_at: float = field(default_factory=time.time)
    steps: list[StepRecord] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    unpriced_models: list[str] = field(default_factory=list)
    last_check: BudgetCheck | None = None
    answer: str | None = None
    # Big observations: the run's tools (the agent's, plus `read_observation` once needed), the
    # results saved aside, and what the model was shown instead of each (by tool call id).
    tools: ToolRegistry | None = None
    saved: ObservationStore | None = None
    shown: dict[str, str] = field(default_factory=dict)

    def note_model(self, model: str, priced: bool) -> None:
        if model and model not in self.models:
            self.models.append(model)
        if not priced and model not in self.unpriced_models:
            self.unpriced_models.append(model)
            log.warning("no price known for model %r: its calls count as $0 against the cost budget", model)


class Agent:
    """A ReAct agent. Build once, `await agent.run(task)` many times (runs share no state)."""

    def __init__(
        self,
        name: str,
        version: str,
        llm: LLM,
        tools: ToolRegistry | Iterable[Tool] | None = None,
        *,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        budget: Budget | None = None,
        policy: SideEffectPolicy | None = None,
        mode: Mode = "text",
        observation_max_tokens: int = OBSERVATION_MAX_TOKENS,
        loop_guard: LoopGuard | None = None,
        context_limit_tokens: int = 128_000,
        compaction_watermark: float = 0.8,
        compaction_min_tokens: int = 200,
        summariser: Summariser | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        agent_id: str | None = None,
        memory: LongTermMemory | None = None,
        big_observations: BigObservations | None = None,
        handoff: HandoffPolicy | None = None,
        purpose: LLMPurpose | str = LLMPurpose.STEP,
    ) -> None:
        if mode not in ("text", "function_calling"):
            raise ValueError(f"mode must be 'text' or 'function_calling', not {mode!r}")
        if observation_max_tokens < 1:
            raise ValueError("observation_max_tokens must be >= 1")
        if not 0 < compaction_watermark <= 1:
            raise ValueError("compaction_watermark must be in (0, 1]")
        self.name = name
        self.version = version
        # What the run's model calls are for (each chat span's steplens.llm.purpose, what a Router
        # routes on): a ReAct step, or `judge` for an agent that grades another run's output.
        self.purpose = LLMPurpose(purpose)
        # `gen_ai.agent.id` on run spans: stable across processes unless the caller has a real id.
        self.agent_id = agent_id if agent_id is not None else f"{name}@{version}"
        self.llm = llm
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or ())
        self.handoff = handoff
        self._add_escalation_tool()
        self.system_prompt = system_prompt
        self.budget = budget or Budget()
        self.policy = policy
        self.mode: Mode = mode
        self.observation_max_tokens = observation_max_tokens
        self.loop_guard = loop_guard or LoopGuard()
        self.context_policy = ContextPolicy(
            context_limit_tokens=context_limit_tokens,
            watermark=compaction_watermark,
            min_elide_tokens=compaction_min_tokens,
            summariser=summariser,
            budget_tokens=self.budget.context_watermark_tokens,
        )
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.memory = memory
        self.big_observations = big_observations
        if memory is not None:  # a copy: the caller's registry does not grow a tool behind its back
            self.tools = ToolRegistry([*self.tools, memory.remember_tool(_RUN_MEMORY_SCOPE.get)])

    # ---- public API -------------------------------------------------------------------------

    async def run(
        self,
        task: str,
        *,
        conversation_id: str | None = None,
        user_id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Run the loop on `task` until it finishes or a limit stops it. Never raises.

        The run is one trace (`invoke_agent {name}`), a child of the caller's current span if any;
        `RunResult.trace_id` is its id (None while tracing is off)."""
        with telemetry.run_span(self, task, conversation_id, user_id) as span:
            result = await self._run(task, conversation_id, user_id, cancel)
            await hand_off(self.handoff, result)
            span.finish(result)
        result.trace_id = span.trace_id
        return result

    async def _run(
        self, task: str, conversation_id: str | None, user_id: str | None, cancel: asyncio.Event | None
    ) -> RunResult:
        state: RunState | None = None
        reason, error = StopReason.INTERNAL_ERROR, None
        scope_token = _RUN_MEMORY_SCOPE.set(memory_scope(self.agent_id, user_id))
        try:
            state = self._new_state(task, conversation_id, user_id, cancel)
            await self._loop(state)
            reason = StopReason.FINISH
        except _Stop as stop:
            reason, error = stop.reason, stop.detail
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # we answer the cancellation with a result instead of re-raising
            reason, error = StopReason.CANCELLED, "the run's task was cancelled"
        except Exception as exc:
            log.exception("agent %s: internal error", self.name)
            reason, error = StopReason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"
        finally:
            _RUN_MEMORY_SCOPE.reset(scope_token)
        try:
            return self._result(state, task, conversation_id, user_id, reason, error)
        except Exception as exc:  # e.g. a task that is not a string: still answer, never raise
            log.exception("agent %s: could not build the run result", self.name)
            return RunResult(
                ok=False,
                stop_reason=StopReason.INTERNAL_ERROR,
                error=f"{type(exc).__name__}: {exc}" if error is None else f"{error}; then {type(exc).__name__}",
                agent=self.name,
                version=self.version,
            )

    def run_sync(
        self,
        task: str,
        *,
        conversation_id: str | None = None,
        user_id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """`run` for synchronous code. Inside a running event loop it runs on a helper thread
        (with its own loop) rather than failing, so notebooks and sync callbacks can use it."""
        coro_args = {"conversation_id": conversation_id, "user_id": user_id, "cancel": cancel}
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(task, **coro_args))
        box: list[RunResult] = []
        # The helper thread runs in a copy of the caller's context, so the caller's current span
        # (and run labels) still apply to the run.
        ctx = contextvars.copy_context()
        worker = threading.Thread(target=lambda: box.append(ctx.run(asyncio.run, self.run(task, **coro_args))))
        worker.start()
        worker.join()
        return box[0]

    def _add_escalation_tool(self) -> None:
        """Offer the hand-off policy's escalation tool (a copy of the registry: the caller's stays as given)."""
        tool = self.handoff.escalation() if self.handoff is not None else None
        if tool is not None:
            self.tools = ToolRegistry([*self.tools, tool])

    def _escalation_stop(self, call: ToolCall) -> None:
        """A call of the escalation tool ends the run as a hand-off (stop reason `handoff`)."""
        if self.handoff is not None and self.handoff.escalation_tool and call.name == self.handoff.escalation_tool:
            reason = call.arguments.get("reason")
            raise _Stop(StopReason.HANDOFF, str(reason) if reason else "the model asked for a human")

    # ---- the run ----------------------------------------------------------------------------

    def _new_state(
        self, task: str, conversation_id: str | None, user_id: str | None, cancel: asyncio.Event | None
    ) -> RunState:
        if self.mode == "text":
            tool_prompt = f"Available tools:\n{self.tools.as_prompt_text()}\n\n{EXPECTED_FORMAT}"
            schemas = None
        else:
            tool_prompt, schemas = "", self.tools.as_openai_tools()
        context = Context(
            system_prompt=self._system_with_memories(task, user_id),
            task=task,
            mode=self.mode,
            tool_prompt=tool_prompt,
            tool_schemas=schemas,
            policy=self.context_policy,
        )
        return RunState(
            task=task,
            conversation_id=conversation_id,
            user_id=user_id,
            cancel=cancel,
            budget=BudgetTracker(self.budget),
            guard=self.loop_guard.session(),
            context=context,
            tools=self.tools,
            saved=ObservationStore(self.big_observations) if self.big_observations is not None else None,
        )

    def _system_with_memories(self, task: str, user_id: str | None) -> str:
        """The system prompt, plus what long-term memory recalls for this user and task (within
        the memory's cap). A memory store that fails costs the run its memories, not the run."""
        if self.memory is None or not isinstance(task, str):
            return self.system_prompt
        try:
            block = self.memory.recall(memory_scope(self.agent_id, user_id), task).as_context()
        except Exception:
            log.warning("agent %s: memory recall failed; the run goes on without memories", self.name, exc_info=True)
            return self.system_prompt
        return f"{self.system_prompt}\n\n{block}" if block else self.system_prompt

    async def _loop(self, state: RunState) -> None:
        """Steps until a finish (returns) or a stop (raises `_Stop`)."""
        while True:
            self._raise_if_cancelled(state)
            check = self._budget_check(state)
            if check.exhausted is not None:
                telemetry.budget_check(check)  # under the run: no step starts
                raise _Stop(check.exhausted, self._exhausted_detail(check))
            index = len(state.steps) + 1
            with telemetry.step_span(index, state.steps):
                telemetry.budget_check(check)
                record = await self._step(state, index)
            if record.kind == StepKind.FINISH:
                return

    def _budget_check(self, state: RunState) -> BudgetCheck:
        """Before every LLM call: snapshot all limits (what the `budget_check` span records)."""
        state.last_check = state.budget.check()
        return state.last_check

    @staticmethod
    def _exhausted_detail(check: BudgetCheck) -> str:
        name = check.exhausted_limit or "?"
        line = getattr(check, name)
        return f"{name} limit reached: used {line.used:g} of {line.limit:g}"

    async def _step(self, state: RunState, index: int) -> StepRecord:
        """One iteration: (compaction), LLM call, then tools, format feedback or the finish."""
        started_at, t0 = time.time(), time.monotonic()
        await self._compact(state)
        call = await self._call_llm(state)
        state.budget.add_step()
        parsed = parse_response(call.response, text_is_final=self.mode == "function_calling")
        record = StepRecord(
            index=index,
            kind=StepKind.TOOL,
            parse=parsed.status,
            thought=parsed.thought,
            model=call.model,
            usage=call.usage,
            cost_usd=call.cost_usd,
            started_at=started_at,
        )
        state.steps.append(record)
        try:
            if parsed.status == ParseStatus.UNPARSABLE:
                self._on_unparsable(state, record, call.response, parsed)
            elif parsed.calls:
                state.budget.record_parse(False)
                await self._on_calls(state, record, call.response, parsed)
            else:
                state.budget.record_parse(False)
                self._on_final(state, record, call.response, parsed)
        finally:
            record.duration_s = time.monotonic() - t0
            if record.kind in _EMPTY_ROUND_KINDS:  # nothing ran: compaction may drop it once old
                state.context.mark_empty_round(index)
        return record

    async def _compact(self, state: RunState) -> list[Compaction]:
        """Keep the prompt under the watermark (old empty rounds dropped, old observations and
        thoughts elided or summarised), in a `compact_context` span when it is over. Bounded like
        an LLM call because a summariser usually is one."""
        if not state.context.over_threshold():
            return []
        with (
            telemetry.compact_span(state.context.policy.threshold_tokens) as span,
            accounted_by(lambda llm, messages, response: self._account(state, llm, messages, None, response)),
        ):
            report = await self._bounded(state, state.context.compact_report(), "context compaction")
            span.finish(report)
        return report.done if report is not None else []

    async def _call_llm(self, state: RunState) -> LLMCall:
        """The LLM call, bounded by the remaining wall-clock time and the cancel event."""
        messages = state.context.prompt()
        tools = state.context.tools
        max_tokens = _min_opt(self.max_tokens, state.budget.remaining_output_tokens())
        try:
            response = await self._bounded(
                state,
                telemetry.complete(self.llm, messages, tools, temperature=self.temperature, max_tokens=max_tokens,
                                   purpose=self.purpose),
                "the LLM call",
            )
        except LLMError as exc:  # LLMUnavailable, or a bare adapter's classified failure
            raise _Stop(StopReason.LLM_UNAVAILABLE, f"{exc.error_type}: {exc.message}") from exc
        if not isinstance(response, LLMResponse):
            raise TypeError(f"LLM returned {type(response).__name__}, not LLMResponse")
        usage, price, model = self._account(state, self.llm, messages, tools, response)
        return LLMCall(
            response=response,
            usage=usage,
            cost_usd=price or 0.0,
            model=model,
            provider=response.provider or describe(self.llm)[1],
            max_tokens=max_tokens,
        )

    @staticmethod
    def _account(
        state: RunState, llm: LLM, messages: list[Message], tools: list[dict] | None, response: LLMResponse
    ) -> tuple[Usage, float | None, str]:
        """Count one LLM response against the run's budget (steps' calls and compaction
        summaries alike): (usage, price or None when the model is unpriced, model)."""
        model = response.model or describe(llm)[0]
        usage = response.usage if response.usage is not None else estimate_usage(messages, tools, response)
        price = cost_usd(model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        state.note_model(model, priced=price is not None)
        state.budget.add_usage(usage)
        state.budget.add_cost(price or 0.0)
        return usage, price, model

    # ---- what the model said ----------------------------------------------------------------

    def _on_unparsable(
        self, state: RunState, record: StepRecord, response: LLMResponse, parsed: ParsedOutput
    ) -> None:
        record.kind = StepKind.FORMAT_ERROR
        expected = EXPECTED_FORMAT if self.mode == "text" else FUNCTION_CALLING_FORMAT
        feedback = f"Your last reply could not be used: {parsed.error}\n\n{expected}"
        record.observation_text = feedback
        # broken calls are not replayed to the model
        state.context.add_assistant(response.text, [], step=record.index)
        state.context.add_feedback(feedback)
        state.budget.record_parse(True)
        if state.budget.unparsable_exhausted():
            raise _Stop(
                StopReason.UNPARSABLE_EXHAUSTED,
                f"{state.budget.consecutive_unparsable} unparsable replies in a row; last: {parsed.error}",
            )

    def _on_final(self, state: RunState, record: StepRecord, response: LLMResponse, parsed: ParsedOutput) -> None:
        refusal = state.guard.check_finish()
        record.answer = parsed.final_answer
        state.context.add_assistant(response.text, [], step=record.index)
        if refusal is not None:
            record.kind = StepKind.LOOP_GUARD
            record.observation_text = refusal
            event = GuardEvent(rule=GuardRule.UNACKNOWLEDGED_ERROR, severity="soft", message=refusal)
            record.guard_events.append(event)
            telemetry.guard_event(event)
            state.context.add_feedback(refusal)
            return
        record.kind = StepKind.FINISH
        state.answer = parsed.final_answer

    async def _on_calls(
        self, state: RunState, record: StepRecord, response: LLMResponse, parsed: ParsedOutput
    ) -> None:
        record.calls = list(parsed.calls)
        state.context.add_assistant(_assistant_text(response, record.calls, self.mode), record.calls,
                                    step=record.index, thought=parsed.thought)
        seen: list[tuple[ToolCall, str]] = []
        executed = 0
        try:
            for call in record.calls:
                self._raise_if_cancelled(state)
                self._escalation_stop(call)
                verdict = state.guard.check_call(record.index, call)
                if verdict is not None:
                    # A guard event, not a tool call: nothing is dispatched, no execute_tool span.
                    event = GuardEvent(
                        rule=verdict.rule,
                        severity=verdict.severity,
                        message=verdict.message,
                        tool_name=call.name,
                        tool_call_id=call.id,
                        previous_step=verdict.previous_step,
                        counts_as_error=verdict.counts_as_error,
                    )
                    record.guard_events.append(event)
                    telemetry.guard_event(event)
                    if verdict.counts_as_error:  # a model ignoring warnings runs out of its error streak
                        state.budget.record_tool_outcome(True)
                    seen.append((call, verdict.message))
                    continue
                obs = await self._dispatch_tool(state, call)
                if obs.decision == ToolDecision.PENDING_APPROVAL:
                    record.kind = StepKind.APPROVAL_WAIT
                    obs = await self._await_approval(state, call, obs)
                executed += 1
                record.observations.append(obs)
                record.cost_usd += obs.cost_usd
                state.budget.add_cost(obs.cost_usd)
                state.budget.record_tool_outcome(obs.is_error)
                shown = self._truncate(state, obs).text
                state.guard.record_execution(record.index, call, shown, obs.is_error)
                seen.append((call, shown))
        finally:
            # Even when a timeout or cancel interrupts the calls, what the model saw is recorded
            # and every call it made is answered (providers reject unanswered tool_call ids).
            answered = {c.id for c, _ in seen}
            if self.mode == "function_calling":
                seen += [(c, "NOT_EXECUTED: the run stopped first") for c in record.calls if c.id not in answered]
            state.context.add_observations(record.index, seen)
            record.observation_text = "\n\n".join(text for _, text in seen) if seen else None
        if executed == 0:
            record.kind = StepKind.LOOP_GUARD

    async def _dispatch_tool(self, state: RunState, call: ToolCall) -> Observation:
        """One tool call through `dispatch` (which never raises), bounded like the LLM call."""
        tools = state.tools if state.tools is not None else self.tools
        with telemetry.tool_span(tools.get(call.name), call) as span:
            obs = await self._bounded(state, dispatch(tools, call, self.policy), f"tool {call.name!r}")
            span.finish(obs)
            self._save_aside(state, obs, span)
        return obs

    def _save_aside(self, state: RunState, obs: Observation, span: telemetry.ToolTrace) -> None:
        """Big observations: a result over the limit is kept for the run, the model is shown its
        head and a marker, and `read_observation` joins the run's tools the first time."""
        if state.saved is None or obs.is_error:
            return
        saved = state.saved.maybe_save(obs.content)
        if saved is None:
            return
        state.shown[obs.tool_call_id] = saved.shown
        telemetry.saved_aside(span, size_chars=saved.size_chars, shown_chars=len(saved.shown), ref=saved.ref)
        tools = state.tools if state.tools is not None else self.tools
        if READ_TOOL_NAME not in tools:
            read = state.saved.read_tool()
            state.tools = ToolRegistry([*tools, read])
            if state.context.tool_schemas is not None:
                state.context.tool_schemas.append(read.openai_definition())

    async def _await_approval(self, state: RunState, call: ToolCall, pending: Observation) -> Observation:
        """A call waiting for a person (see `kernel.approvals`): wait for the verdict, bounded by the
        policy's wait and the run's wall clock, then run it (approved), refuse it (rejected), or tell
        the model it did not run (nobody decided). Policies that cannot wait leave it pending."""
        waiter = getattr(self.policy, "await_decision", None)
        if pending.approval_id is None or not callable(waiter):
            return pending
        from kernel.approvals import Decided
        from kernel.dispatch import not_executed_observation

        verdict = await self._bounded(state, waiter(pending.approval_id), "the wait for a human approval")
        if verdict.decision == ToolDecision.PENDING_APPROVAL:
            return not_executed_observation(call, verdict)
        tools = state.tools if state.tools is not None else self.tools
        with telemetry.tool_span(tools.get(call.name), call) as span:
            obs = await self._bounded(state, dispatch(tools, call, Decided(verdict)), f"tool {call.name!r}")
            span.finish(obs)
            self._save_aside(state, obs, span)
        return obs

    def _truncate(self, state: RunState, obs: Observation) -> Truncation:
        """Cut an observation to `observation_max_tokens` before the model sees it (a result saved
        aside is shown as its head and marker, which the truncation then rarely needs to touch)."""
        return telemetry.truncate(state.shown.pop(obs.tool_call_id, obs.content), self.observation_max_tokens)

    # ---- bounding, cancellation, result ------------------------------------------------------

    def _raise_if_cancelled(self, state: RunState) -> None:
        if state.cancel is not None and state.cancel.is_set():
            raise _Stop(StopReason.CANCELLED, "cancelled by the caller's event")

    async def _bounded(self, state: RunState, awaitable: Awaitable[T], what: str) -> T:
        """Await `awaitable`, but stop the run when the wall-clock budget runs out or the cancel
        event is set while it is pending (a hanging provider or tool must not outlive the run)."""
        work = asyncio.ensure_future(awaitable)
        waiters: set[asyncio.Future] = {work}
        cancel_wait: asyncio.Future | None = None
        if state.cancel is not None:
            cancel_wait = asyncio.ensure_future(state.cancel.wait())
            waiters.add(cancel_wait)
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=state.budget.remaining_seconds(), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            pending = [w for w in waiters if not w.done()]
            for w in pending:
                w.cancel()
            if pending:
                # Give cancelled work a moment to clean up, but never hang on one that ignores it.
                with contextlib.suppress(BaseException):
                    await asyncio.wait(pending, timeout=1.0)
        if work in done:
            return work.result()
        if cancel_wait is not None and cancel_wait in done:
            raise _Stop(StopReason.CANCELLED, f"cancelled by the caller's event during {what}")
        raise _Stop(
            StopReason.TIMEOUT,
            f"wall-clock budget of {self.budget.max_seconds:g} s ran out during {what}",
        )

    def _result(
        self,
        state: RunState | None,
        task: str,
        conversation_id: str | None,
        user_id: str | None,
        reason: StopReason,
        error: str | None,
    ) -> RunResult:
        ok = reason == StopReason.FINISH
        if state is None:
            return RunResult(ok=False, stop_reason=reason, error=error, agent=self.name, version=self.version,
                             task=task, conversation_id=conversation_id, user_id=user_id)
        return RunResult(
            ok=ok,
            stop_reason=reason,
            answer=state.answer if ok else None,
            error=None if ok else error,
            steps=state.steps,
            usage=state.budget.usage,
            cost_usd=state.budget.cost_usd,
            duration_s=state.budget.elapsed(),
            trace_id=None,
            agent=self.name,
            version=self.version,
            models=state.models,
            unpriced_models=state.unpriced_models,
            task=task,
            conversation_id=conversation_id,
            user_id=user_id,
        )


def _assistant_text(response: LLMResponse, calls: list[ToolCall], mode: Mode) -> str | None:
    """What the transcript shows for the model's turn. A text-mode model that answered with native
    tool calls and no text would otherwise leave an empty turn before its observation."""
    if mode == "function_calling" or (response.text or "").strip():
        return response.text
    return "\n".join(
        f"Action: {c.name}\nAction Input: {json.dumps(c.arguments, ensure_ascii=False, default=repr)}"
        for c in calls
    )


def _min_opt(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None
