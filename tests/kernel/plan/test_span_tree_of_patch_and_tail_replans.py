"""The exported span tree of a run with one patch and one tail replan (design.md §2): plan and
replan spans under the run with their chat spans, executor steps carrying plan version and step
id, replan granularity/cause/verdict/versions, failed steps marked ERROR."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import tracer
from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
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


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    kids = [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
    return sorted(kids, key=lambda s: s.start_time)


async def test_span_tree_with_one_patch_and_one_tail(memory: TracingHandle) -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  step("E3", "report", {"total": "#E2.total", "customer": "ghost"}), step("E4", "quote", {"symbol": "X"}),
                  answer="#E3"),
        # patch: E1 -> E5; the new sum (E6) expects a `count` the tool does not return: assumption
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2",
                       expect={"type": "object", "required": ["count"]}), cause="unknown customer"),
        # tail: everything not done (E6, E3) is replaced
        plan_json(step("c", "sum_totals", {"rows": "#E5.rows"}), step("d", "report", {"total": "#c.total"}),
                  answer="#d", cause="no count field"),
    ])
    result = await PlanAndExecuteAgent("pe", "2.0", llm, world.registry()).run("ghost's spend")
    assert result.ok, result.error
    spans = list(memory.memory_exporter.get_finished_spans())
    assert {format(s.context.trace_id, "032x") for s in spans} == {result.trace_id}

    [run] = [s for s in spans if s.parent is None]
    assert run.name == "invoke_agent pe"
    assert run.attributes[c.RUN_OK] is True
    assert run.attributes[c.RUN_STOP_REASON] == "finish"
    assert run.attributes[c.RUN_STEPS] == 6
    assert run.attributes[c.GEN_AI_AGENT_VERSION] == "2.0"

    top = _children(spans, run)
    assert [s.name for s in top] == [
        "plan pe", "step 1", "step 2", "replan pe", "step 3", "step 4", "replan pe", "step 5", "step 6"]

    plan = top[0]
    assert plan.attributes[c.GEN_AI_OPERATION_NAME] == "plan"
    assert (plan.attributes[c.PLAN_VERSION], plan.attributes[c.PLAN_STEPS]) == (1, 4)
    for planner in (top[0], top[3], top[6]):
        [chat] = _children(spans, planner)
        assert chat.name == "chat scripted" and chat.kind == SpanKind.CLIENT
        assert chat.attributes[c.GEN_AI_USAGE_INPUT_TOKENS] > 0

    steps = {s.name: s for s in top if s.name.startswith("step")}
    expected = {  # name: (plan version, plan step id, tool, failed)
        "step 1": (1, "E1", "get_orders", True),
        "step 2": (1, "E4", "quote", False),
        "step 3": (2, "E5", "search_orders", False),
        "step 4": (2, "E6", "sum_totals", True),
        "step 5": (3, "E7", "sum_totals", False),
        "step 6": (3, "E8", "report", False),
    }
    for name, (version, step_id, tool_name, failed) in expected.items():
        span = steps[name]
        assert span.attributes[c.PLAN_VERSION] == version, name
        assert span.attributes[c.PLAN_STEP_ID] == step_id, name
        assert span.attributes[c.STEP_ACTION] == tool_name, name
        [tool_span] = _children(spans, span)
        assert tool_span.name == f"execute_tool {tool_name}"
        assert (span.status.status_code == StatusCode.ERROR) is failed, name
    assert steps["step 1"].attributes[c.ERROR_TYPE] == "semantic"
    assert _children(spans, steps["step 1"])[0].attributes[c.ERROR_TYPE] == "exception"
    assert steps["step 4"].attributes[c.ERROR_TYPE] == "assumption"
    assert _children(spans, steps["step 4"])[0].status.status_code != StatusCode.ERROR  # the tool itself worked

    patch, tail = top[3], top[6]
    assert dict(patch.attributes) == {
        c.GEN_AI_AGENT_NAME: "pe",
        c.REPLAN_GRANULARITY: "patch",
        c.REPLAN_FROM_VERSION: 1,
        c.REPLAN_CAUSE: "semantic:exception",
        c.REPLAN_FAILED_STEP: "E1",
        c.REPLAN_VERDICT: "admitted",
        c.REPLAN_TO_VERSION: 2,
        c.PLAN_VERSION: 2,
        c.PLAN_STEPS: 4,
        # what the replanner was given and what it changed
        c.REPLAN_ROUTE_RULE: "patch",
        c.REPLAN_ROUTE_ESCALATED: False,
        c.REPLAN_LESSONS: (result.replans[0].lessons[0],),
        c.REPLAN_VARIABLES_CLEAN: 1,  # E4's quote
        c.REPLAN_VARIABLES_STALE: 0,
        c.REPLAN_VARIABLES_VOID: 0,
        c.REPLAN_TOOL_CALLS: 2,  # get_orders and quote since the first plan
        c.REPLAN_BUDGET_USED_TOKENS: 0,
        c.REPLAN_KEPT: ("E3", "E4"),
        c.REPLAN_DROPPED: ("E1", "E2"),
        c.REPLAN_ADDED: ("E5", "E6"),
    }
    assert "get_orders" in result.replans[0].lessons[0]
    assert tail.attributes[c.REPLAN_BUDGET_USED_TOKENS] == result.replans[0].input_tokens + result.replans[0].output_tokens
    assert tail.attributes[c.REPLAN_GRANULARITY] == "tail"
    assert tail.attributes[c.REPLAN_CAUSE] == "assumption"
    assert tail.attributes[c.REPLAN_FAILED_STEP] == "E6"
    assert (tail.attributes[c.REPLAN_FROM_VERSION], tail.attributes[c.REPLAN_TO_VERSION]) == (2, 3)
    assert tail.attributes[c.REPLAN_VERDICT] == "admitted"
    assert tail.attributes[c.PLAN_STEPS] == 4  # the completed E5 and E4 are carried, E7 and E8 new
    assert c.REPLAN_REEXECUTION_COST_USD not in tail.attributes  # only global replans throw work away
    assert result.answer == " spent 5"


async def test_global_replan_span_records_the_reexecution_cost(memory: TracingHandle) -> None:
    llm = ScriptedLLM([
        plan_json(step("E1", "load_dataset", {"name": "sales"}),
                  step("E2", "verify_year", {"year": "#E1.year"}, premise=True)),
        plan_json(step("n", "load_dataset", {"name": "sales-2024"}), answer="#n.name", cause="old data"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("sales")
    assert result.ok, result.error
    [replan] = [s for s in memory.memory_exporter.get_finished_spans() if s.name == "replan pe"]
    assert replan.attributes[c.REPLAN_GRANULARITY] == "global"
    assert replan.attributes[c.REPLAN_REEXECUTION_COST_USD] == pytest.approx(0.5)
    [run] = [s for s in memory.memory_exporter.get_finished_spans() if s.name == "invoke_agent pe"]
    assert run.attributes[c.USAGE_COST_USD] == pytest.approx(1.0)  # both dataset loads were paid


async def test_a_resilient_llm_gets_one_chat_span_per_attempt_not_two(memory: TracingHandle) -> None:
    from kernel.llm import LLMError, ResilientLLM

    async def no_sleep(_: float) -> None:
        return None

    flaky = ScriptedLLM([LLMError("busy", error_type="rate_limit", retryable=True),
                         plan_json(step("E1", "quote", {"symbol": "X"}), answer="#E1.price")])
    llm = ResilientLLM([flaky], sleep=no_sleep)
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("price")
    assert result.ok, result.error
    spans = list(memory.memory_exporter.get_finished_spans())
    [plan] = [s for s in spans if s.name == "plan pe"]
    chats = _children(spans, plan)
    assert [s.name for s in chats] == ["chat scripted", "chat scripted"]
    assert [s.attributes[c.LLM_ATTEMPT] for s in chats] == [1, 2]
    assert chats[0].attributes[c.ERROR_TYPE] == "rate_limit"
