"""The executor: retries then the fallback tool absorb environmental errors before the replanner
hears of them; independent steps run at the same time; each other failure is classified into a
capped signal (permission, assumption, missing variable)."""

from __future__ import annotations

import asyncio

from kernel.llm import ScriptedLLM
from kernel.plan import ExecutorConfig, FailureKind, PlanAndExecuteAgent
from kernel.policy import DenyAll
from kernel.tools import ToolRegistry, tool
from tests.kernel.plan.toolkit import World, plan_json, step

NO_WAIT = ExecutorConfig(retries=1, backoff_initial_s=0, backoff_max_s=0)


async def test_retry_then_fallback_before_any_replan() -> None:
    world = World(quote_timeouts=2)  # quote: 2 attempts, both time out; backup_quote answers
    llm = ScriptedLLM([plan_json(step("E1", "quote", {"symbol": "X"},
                                      fallback={"tool": "backup_quote", "args": {"symbol": "X"}}),
                                 answer="#E1.price")])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry(), executor=NO_WAIT).run("price")
    assert result.ok, result.error
    assert result.answer == "11" and result.failures == [] and result.replans == []
    [record] = result.steps[:1]
    assert [c.name for c in record.calls] == ["quote", "quote", "backup_quote"]
    assert [c.id for c in record.calls] == ["E1-1", "E1-2", "E1-3"]
    assert record.cost_usd == 0.02  # both paid quote attempts are counted
    assert (record.plan_version, record.plan_step_id) == (1, "E1")


async def test_environmental_failure_after_recovery_carries_what_was_tried() -> None:
    world = World(quote_timeouts=10**6)
    llm = ScriptedLLM([
        plan_json(step("E1", "quote", {"symbol": "X"}, on_failure="after_the_fact")), "no price available"])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry(), executor=NO_WAIT).run("price")
    [signal] = result.failures
    assert signal.kind == FailureKind.ENVIRONMENTAL
    assert signal.recovery == ["quote: 2 attempt(s), last timeout"]
    assert signal.evidence == {"error": "timeout"}


async def test_independent_steps_run_concurrently() -> None:
    barrier = asyncio.Barrier(2)

    @tool(timeout_s=2)
    async def left() -> str:
        """Waits for right."""
        await barrier.wait()
        return "L"

    @tool(timeout_s=2)
    async def right() -> str:
        """Waits for left."""
        await barrier.wait()
        return "R"

    llm = ScriptedLLM([plan_json(step("E1", "left"), step("E2", "right"), answer="#E1#E2")])
    result = await PlanAndExecuteAgent("pe", "1", llm, ToolRegistry([left, right])).run("both")
    assert result.ok, result.error  # sequential execution would time out on the barrier
    assert result.answer == "LR"


async def test_denied_side_effect_is_a_permission_failure() -> None:
    llm = ScriptedLLM([plan_json(step("E1", "delete_account", {"customer": "a"}, on_failure="after_the_fact")),
                       "could not delete"])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry(), policy=DenyAll()).run("delete a")
    [signal] = result.failures
    assert (signal.kind, signal.evidence) == (FailureKind.PERMISSION, {"error": "denied"})


async def test_wrong_output_shape_is_an_assumption_and_signals_never_carry_the_output() -> None:
    llm = ScriptedLLM([
        plan_json(step("E1", "big_page", {"url": "u"}), step("E2", "report", {"total": "#E1.rows"},
                                                              on_failure="after_the_fact")),
        "answer"])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("x")
    [signal] = result.failures
    assert signal.kind == FailureKind.ASSUMPTION
    assert signal.message == "#E1.rows: E1.rows does not exist (it is str)"
    assert signal.evidence == {"reference": "#E1.rows"}
    assert "lorem" not in signal.model_dump_json()
