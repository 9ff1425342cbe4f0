"""Plan-and-execute gets what the ReAct loop has: long-term memory (the recall goes into the
planner's prompt within the memory's cap as a `search_memory` span; a plan step calling `remember`
writes through an `upsert_memory` span) and the hand-off policy (a plan step using the escalation
tool ends the run as a hand-off, never dispatched; a breaker, the new gates included, hands off as
`replan_breaker`), with the hook called once and the run span carrying `steplens.run.handoff.*`.
Scripted LLM, real tools, a real SQLite memory file, the real tracer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tracer
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from kernel.memory import LongTermMemory, SQLiteMemoryStore, memory_scope
from kernel.plan import BreakerConfig, PlanAndExecuteAgent
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer import conventions as c
from tracer.conventions import HandoffReason, ReplanVerdict, StopReason
from tracer.provider import TracingHandle


@pytest.fixture
def memory_trace() -> Iterator[TracingHandle]:
    handle = tracer.setup(service_name="plan-memory-tests", endpoint="memory")
    try:
        yield handle
    finally:
        handle.shutdown(timeout_s=2.0)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any]] = []

    async def __call__(self, handoff: Any, result: Any) -> None:
        self.calls.append((handoff, result))


async def test_planner_gets_the_users_memories_within_the_cap(tmp_path: Path, memory_trace: TracingHandle) -> None:
    memory = LongTermMemory(SQLiteMemoryStore(tmp_path / "plans.sqlite"), max_items=2)
    alice = memory_scope("pe@1", "alice")
    memory.write(alice, "orders customer", "alice orders as acme")
    memory.write(alice, "orders currency", "orders totals are in EUR")
    memory.write(alice, "orders report style", "orders reports are one line")
    memory.write(memory_scope("pe@1", "bob"), "orders customer", "bob orders as globex")
    llm = ScriptedLLM([plan_json(step("E1", "search_orders", {"name": "acme"}), answer="#E1.rows")] * 2)
    agent = PlanAndExecuteAgent("pe", "1", llm, World().registry(), memory=memory)

    result = await agent.run("total of my orders", user_id="alice")
    assert result.ok, result.error
    system = llm.calls[0].messages[0].content
    assert "What you remember about this user" in system
    assert sum(line.startswith("- orders ") for line in system.splitlines()) == 2  # the cap: 2 of 3
    assert "globex" not in system
    other = await agent.run("total of my orders", user_id="carol")
    assert other.ok and "What you remember" not in llm.calls[1].messages[0].content

    spans = memory_trace.memory_exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "invoke_agent pe" and s.context.trace_id == int(result.trace_id, 16))
    search = next(s for s in spans if s.name == "search_memory plans" and s.context.trace_id == run.context.trace_id)
    assert search.parent.span_id == run.context.span_id
    assert search.attributes[c.GEN_AI_MEMORY_SEARCH_RESULT_COUNT] == 2
    assert search.attributes[c.MEMORY_CAPPED] == 1
    plan = next(s for s in spans if s.name == "plan pe" and s.context.trace_id == run.context.trace_id)
    assert search.end_time <= plan.start_time  # recalled before planning


async def test_a_plan_step_remembers_through_the_remember_tool(tmp_path: Path, memory_trace: TracingHandle) -> None:
    memory = LongTermMemory(SQLiteMemoryStore(tmp_path / "plans.sqlite"))
    llm = ScriptedLLM([plan_json(step("E1", "remember", {"key": "carrier", "value": "DHL express"}), answer="ok")])
    world = World()
    registry = world.registry()
    agent = PlanAndExecuteAgent("pe", "1", llm, registry, memory=memory)
    assert "remember" in agent.tools and "remember" not in registry  # the caller's registry is untouched
    result = await agent.run("ship with DHL", user_id="alice")
    assert result.ok, result.error
    assert "remember" in llm.calls[0].messages[0].content  # offered to the planner
    [fact] = memory.recall(memory_scope("pe@1", "alice"), "carrier").memories
    assert fact.value == "DHL express"
    spans = memory_trace.memory_exporter.get_finished_spans()
    [write] = [s for s in spans if s.name == "upsert_memory plans"]
    [tool_span] = [s for s in spans if s.name == "execute_tool remember"]
    assert write.parent.span_id == tool_span.context.span_id
    assert write.attributes[c.GEN_AI_MEMORY_SCOPE] == "pe@1/alice"


async def test_a_plan_step_using_the_escalation_tool_hands_off(memory_trace: TracingHandle) -> None:
    hook, world = Recorder(), World()
    llm = ScriptedLLM([plan_json(
        step("E1", "get_orders", {"customer": "acme"}),
        step("E2", "ask_human", {"reason": "refunds over #E1.rows[0].total need a person"}, depends_on=["E1"]),
        step("E3", "delete_account", {"customer": "acme"}, depends_on=["E2"]),
    )])
    policy = HandoffPolicy(hook=hook, escalation_tool="ask_human", target="billing-desk")
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry(), handoff=policy).run("refund acme")
    assert (result.ok, result.stop_reason, result.answer) == (False, StopReason.HANDOFF, None)
    assert result.handoff is not None
    assert (result.handoff.reason, result.handoff.target) == (HandoffReason.ESCALATION, "billing-desk")
    assert result.handoff.detail == "refunds over 30 need a person"
    assert len(hook.calls) == 1
    assert world.called("delete_account") == 0  # nothing after the hand-off ran
    assert "ask_human" in llm.calls[0].messages[0].content
    spans = memory_trace.memory_exporter.get_finished_spans()
    assert not [s for s in spans if s.name == "execute_tool ask_human"]  # never dispatched
    [run] = [s for s in spans if s.name == "invoke_agent pe"]
    assert run.attributes[c.RUN_HANDOFF_REASON] == "escalation"
    assert run.attributes[c.RUN_HANDOFF_TARGET] == "billing-desk"
    assert run.attributes[c.RUN_STOP_REASON] == "handoff"


async def test_a_gate_refusal_hands_off_as_a_replan_breaker(memory_trace: TracingHandle) -> None:
    hook = Recorder()
    llm = ScriptedLLM([plan_json(step("E1", "get_orders", {"customer": "ghost"}))])
    agent = PlanAndExecuteAgent("pe", "1", llm, World().registry(), handoff=HandoffPolicy(hook=hook),
                                breakers=BreakerConfig(min_tool_calls=2))
    result = await agent.run("spend")
    assert result.trip is not None and result.trip.verdict == ReplanVerdict.TOOL_CALL_GATE
    assert result.handoff is not None and result.handoff.reason == HandoffReason.REPLAN_BREAKER
    assert "tool_call_gate" in (result.handoff.detail or "")
    assert len(hook.calls) == 1
    [run] = [s for s in memory_trace.memory_exporter.get_finished_spans() if s.name == "invoke_agent pe"]
    assert run.attributes[c.RUN_HANDOFF_REASON] == "replan_breaker"


async def test_a_closed_memory_store_costs_the_plan_its_memories_not_the_run(tmp_path: Path, caplog) -> None:
    store = SQLiteMemoryStore(tmp_path / "plans.sqlite")
    memory = LongTermMemory(store)
    memory.write(memory_scope("pe@1", "alice"), "orders customer", "alice orders as acme")
    store.close()  # every recall now fails
    llm = ScriptedLLM([plan_json(step("E1", "search_orders", {"name": "acme"}), answer="#E1.rows")])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry(), memory=memory).run("orders", user_id="alice")
    assert result.ok, result.error
    assert "What you remember" not in llm.calls[0].messages[0].content
    assert "memory recall failed" in caplog.text
