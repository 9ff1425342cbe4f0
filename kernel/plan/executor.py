"""The executor: runs a plan version's ready steps, concurrently when they are independent.

Environmental errors (timeouts, rate limits) are handled here, per step, with retries (tenacity,
exponential backoff with jitter) and then the step's fallback tool, so that they reach the
replanner only when no amount of waiting fixed them. Every dispatch goes through the real
`kernel.dispatch` (which never raises); every step is one `step {i}` span carrying the plan
version and step id, with one `execute_tool` span per attempt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from kernel import telemetry
from kernel.approvals import Decided
from kernel.dispatch import dispatch, not_executed_observation
from kernel.plan.model import FailurePolicy, PlanStep
from kernel.plan.revise import StepStatus, known_ids
from kernel.plan.signals import (
    FailureKind,
    FailureSignal,
    cap,
    capped_evidence,
    is_environmental,
    kind_of_observation,
    observation_message,
)
from kernel.plan.state import PlanStop, RunState
from kernel.plan.variables import ResolveError, Variable, parse_output
from kernel.policy import SideEffectPolicy
from kernel.tools import ToolRegistry
from kernel.types import Observation, StepRecord, ToolCall
from tracer import spans
from tracer.conventions import ParseStatus, StepKind, StopReason, ToolDecision


@dataclass(frozen=True)
class ExecutorConfig:
    """`retries`: extra attempts of one tool for environmental errors (then the fallback tool,
    with the same retries). `concurrency`: most steps started in one round."""

    retries: int = 2
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 2.0
    concurrency: int = 8


@dataclass
class StepOutcome:
    step: PlanStep
    record: StepRecord
    signal: FailureSignal | None = None
    variable: Variable | None = None


@dataclass
class RoundResult:
    """How execution of the current version stopped: all done, a failure to route, or a new goal."""

    done: bool = False
    signal: FailureSignal | None = None
    goal_change: str | None = None


class Executor:
    def __init__(
        self,
        tools: ToolRegistry,
        policy: SideEffectPolicy | None = None,
        config: ExecutorConfig | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        escalation_tool: str | None = None,
    ) -> None:
        self.tools = tools
        self.policy = policy
        self.config = config or ExecutorConfig()
        self._sleep = sleep
        # A step using this tool (the hand-off policy's escalation tool) is never dispatched: reaching
        # it ends the run as a hand-off, as the ReAct loop does when the model calls it.
        self.escalation_tool = escalation_tool

    # ---- rounds -----------------------------------------------------------------------------

    async def execute(self, st: RunState) -> RoundResult:
        """Run rounds of ready steps until the version is done, a step fails in a way that needs
        the router, or the caller changes the goal. Budget and cancel stops raise `PlanStop`."""
        assert st.plan is not None
        while True:
            st.checkpoint()
            if st.inbox is not None and (instruction := st.inbox.take()) is not None:
                return RoundResult(goal_change=instruction)
            ready = self._ready(st)
            if not ready:
                if self._skip_blocked(st):
                    continue
                pending = [s for s, v in st.status.items() if v == StepStatus.PENDING]
                if pending:  # the checker rules this out; say so loudly rather than spin
                    raise PlanStop(StopReason.INTERNAL_ERROR, f"steps {pending} can never become ready")
                return RoundResult(done=True)
            limit = st.budget.budget.max_steps
            room = self.config.concurrency if limit is None else min(self.config.concurrency, limit - st.budget.steps)
            ready = ready[: max(1, room)]
            escalation = next((x for x in ready if self.escalation_tool and x.tool == self.escalation_tool), None)
            if escalation is not None:
                self._escalate(st, escalation)
            outcomes = await self._bounded(st, asyncio.gather(*(self.run_step(st, s) for s in ready)))
            first: FailureSignal | None = None
            for out in outcomes:
                st.records.append(out.record)
                if out.signal is None:
                    assert out.variable is not None
                    st.variables.put(out.variable)
                    st.status[out.step.id] = StepStatus.DONE
                elif out.step.on_failure == FailurePolicy.AFTER_THE_FACT:
                    st.status[out.step.id] = StepStatus.FAILED
                    st.failures.append(out.signal)
                    st.recorded_failures[out.step.id] = out.signal
                elif first is None:
                    first = out.signal
            if first is not None:
                return RoundResult(signal=first)

    def _ready(self, st: RunState) -> list[PlanStep]:
        assert st.plan is not None
        in_plan = set(st.plan.ids())
        known = known_ids(st.plan, st.variables)
        ready = []
        for step in st.plan.steps:
            if st.status.get(step.id) != StepStatus.PENDING:
                continue
            deps = [d for d in step.all_deps(known) if d in in_plan]
            if all(st.status.get(d) == StepStatus.DONE for d in deps):
                ready.append(step)
        return ready

    def _skip_blocked(self, st: RunState) -> bool:
        """After-the-fact mode: a step whose input failed cannot run; it becomes missing evidence."""
        assert st.plan is not None
        known = known_ids(st.plan, st.variables)
        changed = False
        for step in st.plan.steps:
            if st.status.get(step.id) != StepStatus.PENDING:
                continue
            lost = [d for d in step.all_deps(known) if st.status.get(d) in (StepStatus.FAILED, StepStatus.SKIPPED)]
            if lost:
                st.status[step.id] = StepStatus.SKIPPED
                st.skip_reasons[step.id] = f"needs {', '.join(lost)}, which produced no result"
                changed = True
        return changed

    async def _bounded(self, st: RunState, work: Awaitable[Any]) -> Any:
        try:
            async with asyncio.timeout(st.budget.remaining_seconds()):
                return await work
        except TimeoutError:
            raise PlanStop(
                StopReason.TIMEOUT, f"wall-clock budget of {st.budget.budget.max_seconds:g} s ran out during a step"
            ) from None

    # ---- one step ---------------------------------------------------------------------------

    async def run_step(self, st: RunState, step: PlanStep) -> StepOutcome:
        assert st.plan is not None
        index = st.next_index()
        version = st.plan.version
        record = StepRecord(
            index=index,
            kind=StepKind.TOOL,
            parse=ParseStatus.OK,
            thought=step.action or None,
            started_at=time.time(),
            plan_version=version,
            plan_step_id=step.id,
        )
        t0 = time.monotonic()
        st.budget.add_step()
        with spans.step_span(index, plan_version=version, plan_step_id=step.id) as span:
            out = await self._run(st, step, record)
            st.tool_calls += len(record.calls)
            record.duration_s = time.monotonic() - t0
            st.budget.add_cost(record.cost_usd)
            span.record(kind=record.kind, action=step.tool, parse=record.parse, thought=step.action,
                        observation=record.observation_text)
            if out.signal is not None:
                span.fail(out.signal.kind.value, out.signal.message)
        return out

    def _escalate(self, st: RunState, step: PlanStep) -> None:
        """The plan reached its escalation step: one step span (never dispatched), then the run ends
        with stop reason `handoff` and the step's `reason` as the detail."""
        assert st.plan is not None
        index = st.next_index()
        record = StepRecord(index=index, kind=StepKind.TOOL, thought=step.action or None, started_at=time.time(),
                            plan_version=st.plan.version, plan_step_id=step.id)
        try:
            args = st.variables.resolve(step.args, known_ids(st.plan, st.variables))
        except ResolveError:
            args = step.args
        reason = args.get("reason") if isinstance(args, dict) else None
        detail = str(reason) if reason else step.action or "the plan asked for a human"
        record.calls.append(ToolCall(id=f"{step.id}-1", name=step.tool, arguments=args if isinstance(args, dict) else {}))
        st.records.append(record)
        with spans.step_span(index, plan_version=st.plan.version, plan_step_id=step.id) as span:
            span.record(kind=StepKind.TOOL, action=step.tool, parse=ParseStatus.OK, thought=step.action,
                        observation=None)
            raise PlanStop(StopReason.HANDOFF, detail)

    def _signal(self, step: PlanStep, version: int, kind: FailureKind, message: str,
                recovery: list[str], evidence: dict[str, Any]) -> FailureSignal:
        return FailureSignal(
            step_id=step.id,
            origin=step.origin,
            tool=step.tool,
            action=step.action,
            version=version,
            kind=kind,
            message=cap(message),
            recovery=recovery,
            evidence=capped_evidence(evidence),
            premise=step.premise,
        )

    async def _run(self, st: RunState, step: PlanStep, record: StepRecord) -> StepOutcome:
        assert st.plan is not None
        version = st.plan.version
        known = known_ids(st.plan, st.variables)
        try:
            args = st.variables.resolve(step.args, known)
        except ResolveError as exc:
            record.observation_text = f"NOT_EXECUTED: {exc}"
            sig = self._signal(step, version, FailureKind(exc.kind), str(exc), [], {"reference": exc.ref})
            return StepOutcome(step, record, signal=sig)

        recovery: list[str] = []
        obs = await self._with_retries(step.tool, args, step.id, 1, record, recovery)
        if is_environmental(obs) and step.fallback is not None:
            try:
                fb_args = st.variables.resolve(step.fallback.args, known)
            except ResolveError as exc:
                recovery.append(f"fallback {step.fallback.tool} not tried: {exc}")
            else:
                obs = await self._with_retries(step.fallback.tool, fb_args, step.id, len(record.calls) + 1,
                                               record, recovery, fallback=True)
        record.observation_text = obs.content
        kind = kind_of_observation(obs)
        if kind is not None:
            evidence: dict[str, Any] = {"error": obs.error.error.value if obs.error else obs.decision.value}
            sig = self._signal(step, version, kind, observation_message(obs), recovery, evidence)
            return StepOutcome(step, record, signal=sig)
        value = parse_output(obs.content)
        if step.expect is not None:
            problem = _expect_problem(step.expect, value)
            if problem is not None:
                evidence = {"expected": problem[1], "path": problem[2]}
                sig = self._signal(step, version, FailureKind.ASSUMPTION,
                                   f"output not as expected: {problem[0]}", recovery, evidence)
                return StepOutcome(step, record, signal=sig)
        var = Variable(step_id=step.id, tool=obs.tool_name, action=step.action, text=obs.content,
                       value=value, version=version, cost_usd=record.cost_usd)
        return StepOutcome(step, record, variable=var)

    async def _with_retries(self, tool: str, args: dict[str, Any], step_id: str, first_n: int,
                            record: StepRecord, recovery: list[str], fallback: bool = False) -> Observation:
        """One tool, retried while its error is environmental; the last observation."""
        counter = {"n": first_n}

        async def attempt() -> Observation:
            call = ToolCall(id=f"{step_id}-{counter['n']}", name=tool, arguments=args)
            counter["n"] += 1
            obs = await self._dispatch(call, record)
            record.calls.append(call)
            record.observations.append(obs)
            record.cost_usd += obs.cost_usd
            return obs

        retrying = AsyncRetrying(
            stop=stop_after_attempt(1 + max(0, self.config.retries)),
            wait=wait_exponential_jitter(multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s,
                                         jitter=self.config.backoff_initial_s),
            retry=retry_if_result(is_environmental),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            sleep=self._sleep,
        )
        obs: Observation = await retrying(attempt)
        tries = counter["n"] - first_n
        code = obs.error.error.value if obs.error else "ok"
        if fallback:
            recovery.append(f"fallback {tool}: {tries} attempt(s), last {code}")
        elif tries > 1:
            recovery.append(f"{tool}: {tries} attempt(s), last {code}")
        return obs

    async def _dispatch(self, call: ToolCall, record: StepRecord) -> Observation:
        """One attempt, in an `execute_tool` span through the kernel's tracing bridge."""
        with telemetry.tool_span(self.tools.get(call.name), call) as span:
            obs = await dispatch(self.tools, call, self.policy)
            span.finish(obs)
        if obs.decision == ToolDecision.PENDING_APPROVAL:
            obs = await self._await_approval(call, obs, record)
        return obs

    async def _await_approval(self, call: ToolCall, pending: Observation, record: StepRecord) -> Observation:
        """A call waiting for a person (`kernel.approvals`), as in the ReAct loop: the step becomes
        `approval_wait`; approved runs the call (a second `execute_tool` span), rejected is a `denied`
        error, nobody deciding in time leaves it not executed. Either failure reaches the router as
        a permission signal. The wait is bounded by the policy's `wait_s` and, because every round
        runs under `_bounded`, by the run's wall clock. Policies that cannot wait leave it pending."""
        waiter = getattr(self.policy, "await_decision", None)
        if pending.approval_id is None or not callable(waiter):
            return pending
        record.kind = StepKind.APPROVAL_WAIT
        verdict = await waiter(pending.approval_id)
        if verdict.decision == ToolDecision.PENDING_APPROVAL:
            return not_executed_observation(call, verdict)
        with telemetry.tool_span(self.tools.get(call.name), call) as span:
            obs = await dispatch(self.tools, call, Decided(verdict))
            span.finish(obs)
        return obs


def _expect_problem(schema: dict[str, Any], value: Any) -> tuple[str, str, str] | None:
    """(message, what the schema wanted, where) for the most relevant violation, else None."""
    validator = validator_for(schema)(schema)
    err = best_match(validator.iter_errors(value))
    if err is None:
        return None
    # The message names the place and the rule, never the value: the value is observation text,
    # which must not travel into the replan prompt.
    where = "/".join(str(p) for p in err.absolute_path) or "(output)"
    want = f"{err.validator}: {err.validator_value!r}"
    return f"at {where}, the schema wants {want}", want, where
