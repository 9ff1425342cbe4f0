"""`PlanAndExecuteAgent`: plan once, execute, repair the plan only as much as a failure needs.

The run: a planner call writes version 1 (`plan` span); the executor runs it (`step` spans with
plan version and step id); a failure the executor could not absorb becomes a `FailureSignal`,
the router picks a granularity, the breakers and gates decide whether a replan may be paid for,
and the replanner writes the next version (`replan` span with its verdict). At the end, either
the plan's answer template is filled from the results, or a solver call answers from the
evidence, naming what is missing. `run` never raises; like the ReAct loop it always answers
with a result whose `ok` is true only for `finish`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Iterable

from kernel import telemetry
from kernel.budgets import Budget, BudgetTracker
from kernel.handoff import HandoffPolicy, hand_off
from kernel.llm import LLM
from kernel.memory import LongTermMemory, memory_scope
from kernel.plan.breakers import BreakerConfig, Breakers
from kernel.plan.checker import check_plan
from kernel.plan.executor import Executor, ExecutorConfig
from kernel.plan.lessons import MAX_LESSONS, LessonBook
from kernel.plan.llm_call import call_llm
from kernel.plan.model import Plan, PlanFormatError, parse_plan_draft
from kernel.plan.prompts import (
    completed_lines,
    evidence_line,
    goal_text,
    plan_messages,
    remaining_lines,
    replan_messages,
    signal_block,
    solver_messages,
)
from kernel.plan.result import BreakerTrip, CompletedResult, PlanRunResult, ReplanRecord
from kernel.plan.revise import (
    StepStatus,
    first_plan,
    known_ids,
    mark_for_global,
    replace_scope,
    revise,
)
from kernel.plan.router import Granularity, RouteDecision, Router, RouterRules
from kernel.plan.signals import FailureKind, FailureSignal, cap
from kernel.plan.state import GoalInbox, PlanStop, RunState
from kernel.plan.variables import ResolveError, VariableHealth
from kernel.policy import SideEffectPolicy
from kernel.tokens import estimate_messages_tokens
from kernel.tools import Tool, ToolRegistry
from kernel.types import StepRecord
from tracer import spans
from tracer.conventions import ACTION_FINISH, LLMPurpose, ReplanVerdict, StepKind, StopReason

log = logging.getLogger(__name__)

# The memory scope of the plan run in progress, read by the shared `remember` tool (set per run).
_PLAN_MEMORY_SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("steplens_plan_memory_scope",
                                                                                 default=None)


class _Session:
    """Per-run helpers that are not data (router memory, breakers, lessons)."""

    def __init__(self, router: Router, lessons: LessonBook) -> None:
        self.router = router
        self.lessons = lessons
        self.breakers: Breakers | None = None
        self.replans: list[ReplanRecord] = []
        self.trip: BreakerTrip | None = None
        self.reexecution_cost_usd = 0.0
        self.escalation_reset = False  # a goal change cleared the router's memory; told on the next replan span
        self.format_errors: list[str] = []
        self.memories = ""  # long-term memory's recall block for the planner ('' without memory)
        self.missing: list[str] = []
        self.answer: str | None = None


class PlanAndExecuteAgent:
    """Build once, `await agent.run(goal)` many times (runs share no state)."""

    def __init__(
        self,
        name: str,
        version: str,
        llm: LLM,
        tools: ToolRegistry | Iterable[Tool] | None = None,
        *,
        budget: Budget | None = None,
        policy: SideEffectPolicy | None = None,
        router_rules: RouterRules | None = None,
        breakers: BreakerConfig | None = None,
        executor: ExecutorConfig | None = None,
        max_lessons: int = MAX_LESSONS,
        max_plan_attempts: int = 3,
        temperature: float | None = None,
        max_tokens: int | None = None,
        agent_id: str | None = None,
        handoff: HandoffPolicy | None = None,
        memory: LongTermMemory | None = None,
    ) -> None:
        if max_plan_attempts < 1:
            raise ValueError("max_plan_attempts must be >= 1")
        self.name = name
        self.version = version
        # `gen_ai.agent.id` on run spans, as `Agent` does: stable unless the caller has a real id.
        self.agent_id = agent_id if agent_id is not None else f"{name}@{version}"
        self.llm = llm
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or ())
        # Copies of the registry, never the caller's: the hand-off policy's escalation tool (a plan
        # step using it ends the run as a hand-off) and long-term memory's `remember` tool.
        self.handoff = handoff
        escalation = handoff.escalation() if handoff is not None else None
        if escalation is not None:
            self.tools = ToolRegistry([*self.tools, escalation])
        self.memory = memory
        if memory is not None:
            self.tools = ToolRegistry([*self.tools, memory.remember_tool(_PLAN_MEMORY_SCOPE.get)])
        self.budget = budget or Budget(max_steps=None)
        self.policy = policy
        self.router_rules = router_rules or RouterRules()
        self.breaker_config = breakers or BreakerConfig()
        self.executor = Executor(self.tools, policy, executor,
                                 escalation_tool=escalation.name if escalation is not None else None)
        self.max_lessons = max_lessons
        self.max_plan_attempts = max_plan_attempts
        self.temperature = temperature
        self.max_tokens = max_tokens

    # ---- public API -------------------------------------------------------------------------

    async def run(
        self,
        goal: str,
        *,
        inbox: GoalInbox | None = None,
        cancel: asyncio.Event | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> PlanRunResult:
        """Plan, execute and replan until the goal is answered or a limit stops it. Never raises.
        `inbox.change(text)` during the run forces a global replan toward the new instruction."""
        t0 = time.monotonic()
        st = RunState(goal=str(goal), budget=BudgetTracker(self.budget), inbox=inbox, cancel=cancel)
        session = _Session(Router(self.router_rules), LessonBook(self.max_lessons))
        reason, error = StopReason.INTERNAL_ERROR, None
        result: PlanRunResult | None = None
        # Through the kernel's bridge, like the ReAct loop: the run span gets the caller's labels
        # (eval run/case ids, run mode from `telemetry.run_labels`, shadow/replay from the policy/LLM).
        with telemetry.run_span(self, st.goal, conversation_id, user_id) as run:
            trace_id = run.trace_id
            scope_token = _PLAN_MEMORY_SCOPE.set(memory_scope(self.agent_id, user_id))
            try:
                session.memories = self._recall(st.goal, user_id)
                await self._run(st, session)
                reason = StopReason.FINISH
            except PlanStop as stop:
                reason, error = stop.reason, stop.detail
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                reason, error = StopReason.CANCELLED, "the run's task was cancelled"
            except Exception as exc:
                log.exception("plan agent %s: internal error", self.name)
                reason, error = StopReason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"
            finally:
                _PLAN_MEMORY_SCOPE.reset(scope_token)
            try:
                result = self._result(st, session, reason, error, t0, conversation_id, user_id, trace_id)
            except Exception as exc:
                log.exception("plan agent %s: could not build the run result", self.name)
                result = PlanRunResult(ok=False, stop_reason=StopReason.INTERNAL_ERROR,
                                       error=f"{type(exc).__name__}: {exc}", agent=self.name,
                                       version=self.version, trace_id=trace_id)
            await hand_off(self.handoff, result)
            run.finish(result)
        return result

    # ---- the run ----------------------------------------------------------------------------

    def _recall(self, goal: str, user_id: str | None) -> str:
        """Long-term memory's block for the planner (within the memory's cap; one `search_memory`
        span under the run span). A failing store costs the run its memories, never the run."""
        if self.memory is None:
            return ""
        try:
            return self.memory.recall(memory_scope(self.agent_id, user_id), goal).as_context()
        except Exception:
            log.warning("plan agent %s: memory recall failed; planning goes on without memories", self.name,
                        exc_info=True)
            return ""

    async def _run(self, st: RunState, session: _Session) -> None:
        plan = await self._plan(st, session)
        st.adopt(plan)
        session.breakers = Breakers.for_plan(self.breaker_config, len(plan.steps))
        session.breakers.remember(plan)
        while True:
            outcome = await self.executor.execute(st)
            if outcome.done:
                break
            if outcome.goal_change is not None:
                st.goal_changes.append(outcome.goal_change)
                session.router.reset()  # escalation earned toward the old goal does not carry over
                session.escalation_reset = True
                signal = FailureSignal(
                    step_id="", origin="goal", tool="", action="goal change", version=st.plan.version,
                    kind=FailureKind.GOAL_CHANGE, message=cap(outcome.goal_change),
                )
            else:
                assert outcome.signal is not None
                signal = outcome.signal
                st.failures.append(signal)
                session.lessons.learn(signal)
            session.breakers.note_failure(signal)
            decision = session.router.route(signal)
            if decision.granularity == Granularity.NONE:
                if session.breakers.step_tripped(signal):
                    detail = (f"{signal.origin} failed with {signal.kind.value} "
                              f"{session.breakers.failures[signal.key]} times")
                    self._trip(session, ReplanVerdict.STEP_BREAKER, detail, signal.step_id)
                # Stays in retry/fallback: run the same step again in the next round.
                st.status[signal.step_id] = StepStatus.PENDING
                continue
            await self._replan(st, session, signal, decision)
        await self._answer(st, session)

    def _trip(self, session: _Session, verdict: ReplanVerdict, detail: str, step: str | None) -> None:
        session.trip = BreakerTrip(verdict=verdict, detail=detail, failed_step=step or None)
        raise PlanStop(StopReason.REPLAN_EXHAUSTED, f"{verdict.value}: {detail}")

    async def _plan(self, st: RunState, session: _Session) -> Plan:
        messages = plan_messages(st.goal, self.tools, session.memories)
        with spans.plan_span(self.name) as span:
            for _ in range(self.max_plan_attempts):
                call = await call_llm(self.llm, st, messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                      purpose=LLMPurpose.PLAN)
                try:
                    plan = first_plan(parse_plan_draft(call.response.text), st.ids)
                    problems = check_plan(plan, st.variables, self.tools)
                    if problems:
                        raise PlanFormatError("; ".join(problems))
                except PlanFormatError as exc:
                    session.format_errors.append(f"plan: {exc}")
                    continue
                span.record(version=plan.version, steps=len(plan.steps))
                return plan
            span.fail("format_error", session.format_errors[-1] if session.format_errors else None)
        raise PlanStop(
            StopReason.UNPARSABLE_EXHAUSTED,
            f"no usable plan in {self.max_plan_attempts} attempt(s); last: {session.format_errors[-1]}",
        )

    async def _replan(self, st: RunState, session: _Session, signal: FailureSignal, decision: RouteDecision) -> None:
        assert st.plan is not None and session.breakers is not None
        granularity = decision.granularity
        breakers = session.breakers
        reset, session.escalation_reset = session.escalation_reset, False
        tool_calls = st.tool_calls_since_plan()
        plan = st.plan
        failed_id = signal.step_id or None
        reexecution: float | None = None
        if granularity == Granularity.GLOBAL:
            voided, staled = mark_for_global(plan, st.variables, failed_id, signal.message)
            reexecution = sum(st.variables.variables[x].cost_usd for x in voided + staled)
        scope = replace_scope(plan, st.status, failed_id, granularity)
        done = [s for s in plan.steps if st.status.get(s.id) == StepStatus.DONE]
        remaining = [s for s in plan.steps if st.status.get(s.id) != StepStatus.DONE]
        if granularity == Granularity.GLOBAL:  # results of earlier versions are listed too
            in_plan = {s.id for s in done}
            done_lines = completed_lines(done, st.variables) + [
                line for v in st.versions for s in v.steps if s.id not in in_plan
                and s.id in st.variables for line in completed_lines([s], st.variables)
            ]
            done_lines = list(dict.fromkeys(done_lines))
        else:
            done_lines = completed_lines(done, st.variables)
        while True:
            messages = replan_messages(
                goal=goal_text(st.goal, st.goal_changes),
                completed=done_lines,
                signal=signal_block(signal, granularity, scope, session.lessons.lessons()),
                remaining=remaining_lines(remaining, set(scope)),
                tools=self.tools,
            )
            estimated = estimate_messages_tokens(messages) + self.breaker_config.replan_reply_tokens
            limit = self.budget.max_input_tokens
            remaining_tokens = None if limit is None else max(0, limit - st.budget.usage.input_tokens)
            health = [h.value for h in st.variables.health().values()]
            rec = ReplanRecord(from_version=plan.version, granularity=granularity.value, cause=signal.cause,
                               failed_step=failed_id, estimated_tokens=estimated,
                               reexecution_cost_usd=reexecution, route_rule=decision.rule.value,
                               escalated=decision.escalated, escalation_reset=reset,
                               lessons=session.lessons.lessons(), tool_calls=tool_calls,
                               variables={h.value: health.count(h.value) for h in VariableHealth})
            session.replans.append(rec)
            refused: tuple[ReplanVerdict, str] | None = None
            with spans.replan_span(self.name, granularity=granularity.value, from_version=plan.version,
                                   cause=signal.cause, failed_step=failed_id) as span:
                span.record_context(route_rule=decision.rule.value, escalated=decision.escalated,
                                    escalation_reset=reset, lessons=rec.lessons, variables=rec.variables,
                                    tool_calls=tool_calls, budget_used_tokens=breakers.tokens_used)
                verdict, detail = breakers.before_replan(signal, estimated, remaining_tokens, tool_calls=tool_calls,
                                                         run_input_limit=self.budget.max_input_tokens)
                if verdict != ReplanVerdict.ADMITTED:
                    rec.verdict, rec.detail = verdict, detail
                    span.record(verdict=verdict, reexecution_cost_usd=reexecution)
                    span.refused(verdict, detail)
                    refused = (verdict, detail)
                else:
                    breakers.replans += 1
                    call = await call_llm(self.llm, st, messages, temperature=self.temperature,
                                          max_tokens=self.max_tokens, purpose=LLMPurpose.REPLAN)
                    rec.input_tokens, rec.output_tokens = call.usage.input_tokens, call.usage.output_tokens
                    breakers.spent(call.usage.input_tokens, call.usage.output_tokens)
                    try:
                        draft = parse_plan_draft(call.response.text)
                        revision = revise(plan, st.status, draft, granularity, failed_id, st.ids, st.variables)
                        problems = check_plan(revision.plan, st.variables, self.tools)
                        if problems:
                            raise PlanFormatError("; ".join(problems))
                    except PlanFormatError as exc:
                        rec.format_error = cap(str(exc))
                        session.format_errors.append(f"replan v{plan.version}: {exc}")
                        session.lessons.add(f"a replan was rejected: {exc}")
                        breakers.note_failure(signal)
                        span.fail("format_error", str(exc))
                        continue
                    new = revision.plan
                    rec.kept, rec.dropped, rec.added = revision.kept, revision.dropped, revision.added
                    span.record_steps(kept=revision.kept, dropped=revision.dropped, added=revision.added)
                    repeat = breakers.oscillation(new)
                    if repeat is not None:
                        seen, detail = repeat
                        rec.verdict, rec.detail = ReplanVerdict.OSCILLATION, detail
                        span.record(verdict=ReplanVerdict.OSCILLATION, steps=len(new.steps),
                                    reexecution_cost_usd=reexecution)
                        span.refused(ReplanVerdict.OSCILLATION, detail)
                        session.lessons.add(f"plan version {seen} was proposed again and refused")
                        refused = (ReplanVerdict.OSCILLATION, detail)
                    else:
                        rec.verdict, rec.to_version = ReplanVerdict.ADMITTED, new.version
                        span.record(verdict=ReplanVerdict.ADMITTED, to_version=new.version, steps=len(new.steps),
                                    reexecution_cost_usd=reexecution)
            if refused is not None:
                self._trip(session, refused[0], refused[1], failed_id)
            break
        for step_id in draft.void:
            st.variables.mark(step_id, VariableHealth.VOID, "voided by the replanner")
        if reexecution is not None:
            session.reexecution_cost_usd += reexecution
        breakers.remember(new)
        for dropped in revision.dropped:
            st.status.pop(dropped, None)
        st.adopt(new)

    # ---- the answer -------------------------------------------------------------------------

    async def _answer(self, st: RunState, session: _Session) -> None:
        assert st.plan is not None
        missing_ids = [s.id for s in st.plan.steps if st.status.get(s.id) in (StepStatus.FAILED, StepStatus.SKIPPED)]
        if st.plan.answer and not missing_ids:
            try:
                value = st.variables.resolve(st.plan.answer, known_ids(st.plan, st.variables))
                session.answer = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                return
            except ResolveError as exc:
                log.warning("plan agent %s: answer template not fillable (%s); asking the solver", self.name, exc)
        await self._solve(st, session, missing_ids)

    def _missing_line(self, st: RunState, step_id: str) -> str:
        assert st.plan is not None
        step = st.plan.get(step_id)
        sig = st.recorded_failures.get(step_id)
        why = f"{sig.kind.value}: {sig.message}" if sig else st.skip_reasons.get(step_id, "no result")
        return f"{step_id} {step.tool if step else '?'}: {step.action if step else ''} -> MISSING ({why})"

    async def _solve(self, st: RunState, session: _Session, missing_ids: list[str]) -> None:
        """The solver call (ReWOO): answer from the evidence; the gap is always stated."""
        assert st.plan is not None
        evidence = [line for s in st.plan.steps if (line := evidence_line(s, st.variables)) is not None]
        missing = [self._missing_line(st, x) for x in missing_ids]
        messages = solver_messages(goal_text(st.goal, st.goal_changes), evidence, missing)
        index = st.next_index()
        record = StepRecord(index=index, kind=StepKind.FINISH, started_at=time.time(), plan_version=st.plan.version)
        t0 = time.monotonic()
        with spans.step_span(index, plan_version=st.plan.version) as span:
            call = await call_llm(self.llm, st, messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                  purpose=LLMPurpose.STEP)
            answer = (call.response.text or "").strip()
            unstated = [line for x, line in zip(missing_ids, missing, strict=True) if x not in answer]
            if unstated:  # the solver glossed over the gap: state it ourselves, plainly
                answer = (answer + "\n\n" if answer else "") + "Missing evidence:\n" + "\n".join(unstated)
            record.answer, record.model = answer, call.model
            record.usage, record.cost_usd = call.usage, call.cost_usd
            record.duration_s = time.monotonic() - t0
            span.record(kind=StepKind.FINISH, action=ACTION_FINISH, observation=None)
        st.records.append(record)
        session.missing = missing
        session.answer = answer

    # ---- result -----------------------------------------------------------------------------

    def _result(self, st: RunState, session: _Session, reason: StopReason, error: str | None, t0: float,
                conversation_id: str | None, user_id: str | None, trace_id: str | None) -> PlanRunResult:
        ok = reason == StopReason.FINISH
        completed = []
        for var in st.variables.variables.values():
            completed.append(CompletedResult(
                step_id=var.step_id, tool=var.tool, action=var.action, version=var.version, output=var.text,
                health=var.health, health_reason=var.health_reason, cost_usd=var.cost_usd,
            ))
        return PlanRunResult(
            ok=ok,
            stop_reason=reason,
            answer=session.answer if ok else None,
            error=None if ok else error,
            steps=st.records,
            usage=st.budget.usage,
            cost_usd=st.budget.cost_usd,
            duration_s=time.monotonic() - t0,
            trace_id=trace_id,
            agent=self.name,
            version=self.version,
            models=st.models,
            unpriced_models=st.unpriced_models,
            task=st.goal,
            conversation_id=conversation_id,
            user_id=user_id,
            plan_versions=st.versions,
            replans=session.replans,
            completed=completed,
            failures=st.failures,
            lessons=session.lessons.lessons(),
            trip=session.trip,
            missing_evidence=session.missing,
            goal_changes=st.goal_changes,
            reexecution_cost_usd=session.reexecution_cost_usd,
            format_errors=session.format_errors,
        )
