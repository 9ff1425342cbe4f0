"""A plan-and-execute run opened its run span itself, so evaluations of the planner carried no
`steplens.eval.run_id`/`case_id` and every run looked `live`. The run span now comes from the
kernel's bridge: labels from `telemetry.run_labels`, shadow mode from the policy, agent id."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracer
from kernel import telemetry
from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.policy import Shadow
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer import conventions as c
from tracer.provider import TracingHandle


@pytest.fixture
def memory() -> Iterator[TracingHandle]:
    handle = tracer.setup(service_name="plan-tests", endpoint="memory")
    try:
        yield handle
    finally:
        handle.shutdown(timeout_s=2.0)


def _root(handle: TracingHandle):  # noqa: ANN202 - a ReadableSpan
    [run] = [s for s in handle.memory_exporter.get_finished_spans() if s.parent is None]
    return run


async def test_eval_labels_and_mode_reach_the_plan_run_span(memory: TracingHandle) -> None:
    llm = ScriptedLLM([plan_json(step("E1", "quote", {"symbol": "X"}), answer="#E1.price")])
    agent = PlanAndExecuteAgent("pe", "3", llm, World().registry())
    with telemetry.run_labels(eval_run_id="ev-1", eval_case_id="case-7"):
        result = await agent.run("price of X")
    assert result.ok, result.error
    run = _root(memory)
    assert run.attributes[c.EVAL_RUN_ID] == "ev-1"
    assert run.attributes[c.EVAL_CASE_ID] == "case-7"
    assert run.attributes[c.RUN_MODE] == "eval"
    assert run.attributes[c.GEN_AI_AGENT_ID] == "pe@3"
    assert run.attributes[c.RUN_OK] is True
    assert format(run.context.trace_id, "032x") == result.trace_id


async def test_shadow_policy_marks_the_plan_run_shadow(memory: TracingHandle) -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "delete_account", {"customer": "c1"}, on_failure="after_the_fact"),
                  step("E2", "quote", {"symbol": "X"}), answer="#E2.price"),
        "E1 was only recorded (shadow); the price is 10",
    ])
    policy = Shadow()
    result = await PlanAndExecuteAgent("pe", "3", llm, world.registry(), policy=policy).run("clean up")
    run = _root(memory)
    assert run.attributes[c.RUN_MODE] == "shadow"
    assert world.called("delete_account") == 0, "a shadowed side effect must not run"
    assert [call.name for call in policy.calls] == ["delete_account"]
    decisions = [s.attributes.get(c.TOOL_DECISION) for s in memory.memory_exporter.get_finished_spans()
                 if s.name == "execute_tool delete_account"]
    assert decisions == ["shadowed"]
    assert result.trace_id == format(run.context.trace_id, "032x")
