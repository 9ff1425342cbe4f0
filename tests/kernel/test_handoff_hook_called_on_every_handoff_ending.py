"""The hand-off hook is called once, with the run's result, when a run ends on `llm_unavailable`,
`max_steps`, a replanning breaker (`replan_exhausted`) or the model's call of the escalation tool;
never on a finish or an ending the policy does not name; and a failing or hanging hook never
changes the run's result."""

from __future__ import annotations

import asyncio

import pytest

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from kernel.llm.base import AttemptRecord, LLMUnavailable
from kernel.plan import BreakerConfig, PlanAndExecuteAgent
from kernel.types import Handoff, RunResult
from tests.kernel.plan.toolkit import World, plan_json, step
from tests.support.scripted_runs import act, add, final
from tracer.conventions import HandoffReason, StopReason


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Handoff, RunResult]] = []

    async def __call__(self, handoff: Handoff, result: RunResult) -> None:
        self.calls.append((handoff, result))


async def test_llm_unavailable_hands_off_with_the_failure_as_detail() -> None:
    hook = Recorder()
    attempts = [AttemptRecord("m1", "p", 1, None, "rate_limited", 0.1)]
    agent = Agent("a", "1", ScriptedLLM([act("add", a=1, b=2), LLMUnavailable(attempts)]), [add],
                  handoff=HandoffPolicy(hook=hook, target="support-tier-2"))
    result = await agent.run("t")
    assert result.stop_reason == StopReason.LLM_UNAVAILABLE and result.ok is False
    assert result.handoff is not None
    assert (result.handoff.reason, result.handoff.target) == (HandoffReason.LLM_UNAVAILABLE, "support-tier-2")
    assert "rate_limited" in (result.handoff.detail or "")
    [(handoff, seen)] = hook.calls
    assert handoff == result.handoff and seen is result


async def test_max_steps_hands_off_and_a_sync_hook_is_called_too() -> None:
    calls: list[Handoff] = []
    agent = Agent("a", "1", ScriptedLLM([act("add", a=1, b=2), act("add", a=2, b=3)]), [add],
                  budget=Budget(max_steps=2), handoff=HandoffPolicy(hook=lambda h, r: calls.append(h)))
    result = await agent.run("t")
    assert result.stop_reason == StopReason.MAX_STEPS
    assert calls == [Handoff(reason=HandoffReason.MAX_STEPS, target="human", detail=result.error)]


async def test_escalation_tool_ends_the_run_as_a_handoff_with_the_models_reason() -> None:
    hook = Recorder()
    llm = ScriptedLLM([act("add", a=1, b=2), act("transfer_to_human", reason="customer asks for a refund manager"),
                       final("never reached")])
    agent = Agent("a", "1", llm, [add], handoff=HandoffPolicy(hook=hook, escalation_tool="transfer_to_human"))
    assert "transfer_to_human" in agent.tools.names()
    result = await agent.run("t")
    assert result.stop_reason == StopReason.HANDOFF and result.ok is False and result.answer is None
    assert result.handoff == Handoff(reason=HandoffReason.ESCALATION, target="human",
                                     detail="customer asks for a refund manager")
    assert len(result.steps) == 2 and llm.remaining == 1  # nothing after the escalation
    assert [o.tool_name for s in result.steps for o in s.observations] == ["add"]  # the escalation is not dispatched
    assert len(hook.calls) == 1


async def test_escalation_tool_leaves_the_callers_registry_as_given() -> None:
    from kernel.tools import ToolRegistry

    registry = ToolRegistry([add])
    Agent("a", "1", ScriptedLLM([final("x")]), registry, handoff=HandoffPolicy(escalation_tool="escalate"))
    assert registry.names() == ["add"]


async def test_finish_and_unnamed_endings_are_not_handoffs() -> None:
    hook = Recorder()
    policy = HandoffPolicy(hook=hook, on=frozenset({StopReason.LLM_UNAVAILABLE}))
    done = await Agent("a", "1", ScriptedLLM([final("4")]), [add], handoff=policy).run("t")
    capped = await Agent("a", "1", ScriptedLLM([act("add", a=1, b=2)]), [add], budget=Budget(max_steps=1),
                         handoff=policy).run("t")
    assert done.ok and done.handoff is None
    assert capped.stop_reason == StopReason.MAX_STEPS and capped.handoff is None
    assert hook.calls == []


async def test_replan_breaker_hands_off_a_plan_run() -> None:
    hook = Recorder()
    world = World()
    plans = [plan_json(step("E1", "get_orders", {"customer": "ghost"}))] + [
        plan_json(step("a", "get_orders", {"customer": f"ghost{n}"}, replaces="E1"), cause=f"try {n}")
        for n in range(2, 5)
    ]
    agent = PlanAndExecuteAgent("pe", "1", ScriptedLLM(plans), world.registry(),
                                breakers=BreakerConfig(max_replans=10), handoff=HandoffPolicy(hook=hook))
    result = await agent.run("spend")
    assert result.stop_reason == StopReason.REPLAN_EXHAUSTED
    assert result.handoff is not None and result.handoff.reason == HandoffReason.REPLAN_BREAKER
    assert len(hook.calls) == 1


async def test_failing_or_hanging_hook_never_changes_the_result() -> None:
    def broken(handoff: Handoff, result: RunResult) -> None:
        raise RuntimeError("ticket system down")

    async def hangs(handoff: Handoff, result: RunResult) -> None:
        await asyncio.sleep(60)

    for hook in (broken, hangs):
        agent = Agent("a", "1", ScriptedLLM([act("add", a=1, b=2)]), [add], budget=Budget(max_steps=1),
                      handoff=HandoffPolicy(hook=hook, hook_timeout_s=0.2))
        result = await asyncio.wait_for(agent.run("t"), 5)
        assert result.stop_reason == StopReason.MAX_STEPS
        assert result.handoff is not None and result.handoff.reason == HandoffReason.MAX_STEPS


def test_policy_refuses_endings_that_are_not_handoffs() -> None:
    with pytest.raises(ValueError, match="hand-off reasons"):
        HandoffPolicy(on=frozenset({StopReason.FINISH}))
