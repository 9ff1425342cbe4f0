"""`run` never raises: LLM outages, budgets, cancellation and odd input all end in a result with
the right stop reason; a result round-trips through JSON."""

from __future__ import annotations

import asyncio

from kernel.budgets import Budget
from kernel.llm import LLMError, ScriptedLLM
from kernel.plan import PlanAndExecuteAgent, PlanRunResult
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import StopReason

PLAN = plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "quote", {"symbol": "X"}))


async def test_llm_outage_during_replan_is_llm_unavailable() -> None:
    llm = ScriptedLLM([PLAN, LLMError("overloaded", error_type="server_error", retryable=True)])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("x")
    assert (result.ok, result.stop_reason) == (False, StopReason.LLM_UNAVAILABLE)
    assert "server_error" in result.error
    assert [c.step_id for c in result.completed] == ["E2"]


async def test_step_budget_stops_the_executor() -> None:
    llm = ScriptedLLM([plan_json(step("E1", "quote", {"symbol": "X"}), step("E2", "report", {"total": "#E1.price"}))])
    agent = PlanAndExecuteAgent("pe", "1", llm, World().registry(), budget=Budget(max_steps=1))
    result = await agent.run("x")
    assert (result.ok, result.stop_reason, result.answer) == (False, StopReason.MAX_STEPS, None)
    assert len(result.steps) == 1


async def test_cancel_event_stops_the_run() -> None:
    cancel = asyncio.Event()
    cancel.set()
    result = await PlanAndExecuteAgent("pe", "1", ScriptedLLM([PLAN]), World().registry()).run("x", cancel=cancel)
    assert result.stop_reason == StopReason.CANCELLED


async def test_odd_input_never_raises_and_result_round_trips() -> None:
    llm = ScriptedLLM(policy=lambda messages, tools: PLAN if len(messages) == 2 else "{")
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run(12345)  # type: ignore[arg-type]
    assert isinstance(result, PlanRunResult) and result.ok is False
    again = PlanRunResult.from_json(result.to_json())
    assert again == result
