"""Every kernel call site names its purpose, a Router routes on it, and each chat span records the
purpose, the rule that chose the model and the model it chose: over real HTTP (the fake
OpenAI-compatible server, one adapter per model) and real OTel SDK spans."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from kernel import Agent, Budget, Route, Router, llm_summariser
from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.summarise import SUMMARY_INSTRUCTIONS
from kernel.tools import tool
from tests.kernel.openai_adapters import adapter
from tests.kernel.plan.toolkit import World, plan_json, step
from tests.support.fake_openai import FakeOpenAI, TextReply, ToolCallSpec, ToolCallsReply
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture
from tracer import conventions as c


@tool
async def page(n: int) -> str:
    """Return page n of a long document."""
    return f"PAGE {n} " + ("lorem ipsum " * 120)


def _parent(spans: list[ReadableSpan], child: ReadableSpan) -> ReadableSpan | None:
    return next((s for s in spans if child.parent is not None and s.context.span_id == child.parent.span_id), None)


def _chats(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_time)


async def test_react_steps_go_to_the_default_and_summaries_to_the_summary_rule(
    fake: FakeOpenAI, memory_handle  # noqa: F811 - the fixture imported above
) -> None:
    big = adapter("big-model", fake.base_url, api_key="test")
    small = adapter("small-model", fake.base_url, api_key="test")
    fake.enqueue(*[ToolCallsReply([ToolCallSpec("page", {"n": n}, id=f"c{n}")]) for n in (1, 2, 3)],
                 TextReply("read all three"), model="big-model")
    fake.always("small-model", TextReply("page facts"))
    router = Router(big, [Route.for_purposes(small, c.LLMPurpose.SUMMARY, name="cheap-summaries")])
    agent = Agent("reader", "1", router, [page], mode="function_calling", summariser=llm_summariser(router),
                  budget=Budget(context_watermark_tokens=600), compaction_min_tokens=100)

    result = await agent.run("read the document")

    assert result.ok and result.answer == "read all three", result.error
    # what the provider saw: summaries (the summary instructions) only on the small model
    summary_requests = [r for r in fake.requests if r["messages"][0]["content"] == SUMMARY_INSTRUCTIONS]
    assert summary_requests and all(r["model"] == "small-model" for r in summary_requests)
    assert [r["model"] for r in fake.requests if r not in summary_requests] == ["big-model"] * 4
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    chats = _chats(spans)
    steps = [s for s in chats if s.attributes[c.LLM_PURPOSE] == "step"]
    summaries = [s for s in chats if s.attributes[c.LLM_PURPOSE] == "summary"]
    assert len(steps) == 4 and len(summaries) == len(summary_requests)
    for s in steps:
        assert s.attributes[c.LLM_ROUTE_RULE] == c.ROUTE_DEFAULT
        assert s.attributes[c.LLM_ROUTE_MODEL] == "big-model" == s.attributes[c.GEN_AI_REQUEST_MODEL]
        assert _parent(spans, s).name.startswith("step ")
    for s in summaries:
        assert s.attributes[c.LLM_ROUTE_RULE] == "cheap-summaries"
        assert s.attributes[c.LLM_ROUTE_MODEL] == "small-model" == s.attributes[c.GEN_AI_REQUEST_MODEL]
        compaction = _parent(spans, s)
        assert compaction is not None and compaction.name == c.SPAN_COMPACT, "the summary nests in its compaction"
        assert compaction.attributes[c.COMPACT_SUMMARISED] >= 1


async def test_plan_and_replan_calls_reach_the_planner_rule(memory_handle) -> None:  # noqa: F811
    world = World()
    planner = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  answer="#E2"),
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), answer="#b", cause="unknown customer"),
    ], model="planner-model")
    default = ScriptedLLM(policy=lambda m, t: "the default model answered", model="default-model")
    router = Router(default, [Route.for_purposes(planner, c.LLMPurpose.PLAN, c.LLMPurpose.REPLAN)])

    result = await PlanAndExecuteAgent("pe", "1", router, world.registry()).run("ghost's spend")

    assert result.ok, result.error
    assert len(planner.calls) == 2 and default.calls == []
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    chats = _chats(spans)
    assert [s.attributes[c.LLM_PURPOSE] for s in chats] == ["plan", "replan"]
    for s in chats:
        assert s.attributes[c.LLM_ROUTE_RULE] == "plan+replan"
        assert s.attributes[c.LLM_ROUTE_MODEL] == "planner-model"
        assert _parent(spans, s).name.split()[0] == s.attributes[c.LLM_PURPOSE], "under its plan/replan span"


@pytest.mark.parametrize("purpose", list(c.LLMPurpose))
async def test_a_route_matches_only_its_purposes_and_its_predicate(purpose: c.LLMPurpose) -> None:
    default = ScriptedLLM(policy=lambda m, t: "default", model="d")
    judge = ScriptedLLM(policy=lambda m, t: "judge", model="j")
    router = Router(default, [Route(judge, frozenset({"judge"}), when=lambda p, msgs: len(msgs) == 1, name="j")])
    from kernel.types import Message

    one = [Message(role="user", content="q")]
    llm, rule = router.choose(str(purpose), one)
    assert (llm, rule) == ((judge, "j") if purpose == c.LLMPurpose.JUDGE else (default, c.ROUTE_DEFAULT))
    assert router.choose("judge", one * 2) == (default, c.ROUTE_DEFAULT), "the predicate must hold too"
