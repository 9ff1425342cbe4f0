"""A Router inside a ResilientLLM (the usual production stack: retries and fallbacks around a
router) used to get every call as `step`: the wrapper dropped the purpose, summaries and plans went
to the default model, and the chat span named the router's default model with no rule. Real kernel
runs over real HTTP (the fake OpenAI-compatible server, one adapter per model) and real OTel SDK
spans: the purpose reaches the router through the wrapper, the provider sees each call on the
routed model, and there is exactly one chat span per provider request, naming the routed model,
the rule, the attempt and the fallback."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan

from kernel import Agent, Budget, Route, Router, llm_summariser
from kernel.llm import ResilientLLM, ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.summarise import SUMMARY_INSTRUCTIONS
from kernel.tools import tool
from tests.kernel.openai_adapters import adapter
from tests.kernel.plan.toolkit import World, plan_json, step
from tests.support.fake_openai import FakeOpenAI, HttpErrorReply, TextReply, ToolCallSpec, ToolCallsReply
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture
from tracer import conventions as c


@tool
async def page(n: int) -> str:
    """Return page n of a long document."""
    return f"PAGE {n} " + ("lorem ipsum " * 120)


def _chats(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_time)


def _parent(spans: list[ReadableSpan], child: ReadableSpan) -> ReadableSpan | None:
    return next((s for s in spans if child.parent is not None and s.context.span_id == child.parent.span_id), None)


def _resilient(*chain, attempts: int = 2) -> ResilientLLM:
    async def no_wait(_: float) -> None:
        return None

    return ResilientLLM(list(chain), max_attempts_per_model=attempts, sleep=no_wait)


async def test_summaries_reach_the_summary_rule_through_resilient_llm(fake: FakeOpenAI, memory_handle) -> None:  # noqa: F811
    big = adapter("big-model", fake.base_url, api_key="test")
    small = adapter("small-model", fake.base_url, api_key="test")
    fake.enqueue(*[ToolCallsReply([ToolCallSpec("page", {"n": n}, id=f"c{n}")]) for n in (1, 2, 3)],
                 TextReply("read all three"), model="big-model")
    fake.always("small-model", TextReply("page facts"))
    llm = _resilient(Router(big, [Route.for_purposes(small, c.LLMPurpose.SUMMARY, name="cheap-summaries")]))
    agent = Agent("reader", "1", llm, [page], mode="function_calling", summariser=llm_summariser(llm),
                  budget=Budget(context_watermark_tokens=600), compaction_min_tokens=100)

    result = await agent.run("read the document")

    assert result.ok and result.answer == "read all three", result.error
    summary_requests = [r for r in fake.requests if r["messages"][0]["content"] == SUMMARY_INSTRUCTIONS]
    assert summary_requests and all(r["model"] == "small-model" for r in summary_requests)
    assert [r["model"] for r in fake.requests if r not in summary_requests] == ["big-model"] * 4
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    chats = _chats(spans)
    assert len(chats) == len(fake.requests), "one chat span per provider request: no span of the wrapper on top"
    for s in chats:
        purpose = s.attributes[c.LLM_PURPOSE]
        routed = "small-model" if purpose == "summary" else "big-model"
        assert s.attributes[c.GEN_AI_REQUEST_MODEL] == s.attributes[c.LLM_ROUTE_MODEL] == routed
        assert s.attributes[c.LLM_ROUTE_RULE] == ("cheap-summaries" if purpose == "summary" else c.ROUTE_DEFAULT)
        assert s.name == f"chat {routed}"
    assert sorted(s.attributes[c.LLM_PURPOSE] for s in chats) == sorted(
        ["summary"] * len(summary_requests) + ["step"] * 4)
    for s in chats:
        if s.attributes[c.LLM_PURPOSE] == "summary":
            assert _parent(spans, s).name == c.SPAN_COMPACT, "the summary nests in its compaction"


async def test_retries_and_fallback_of_a_routed_call_are_one_span_each_with_the_rule(
    fake: FakeOpenAI, memory_handle  # noqa: F811
) -> None:
    big = adapter("big-model", fake.base_url, api_key="test")
    backup = adapter("backup-model", fake.base_url, api_key="test")
    fake.always("big-model", HttpErrorReply(500))
    fake.always("backup-model", TextReply("done by the backup"))
    router = Router(big, [Route(big, when=lambda purpose, messages: True, name="everything-big")])
    llm = _resilient(router, backup)

    result = await Agent("desk", "1", llm, [], mode="function_calling").run("hello")

    assert result.ok and result.answer == "done by the backup", result.error
    assert [r["model"] for r in fake.requests] == ["big-model", "big-model", "backup-model"]
    chats = _chats(list(memory_handle.memory_exporter.get_finished_spans()))
    seen = [(s.attributes[c.GEN_AI_REQUEST_MODEL], s.attributes[c.LLM_ATTEMPT],
             s.attributes.get(c.LLM_FALLBACK_FROM), s.attributes.get(c.LLM_ROUTE_RULE)) for s in chats]
    assert seen == [("big-model", 1, None, "everything-big"), ("big-model", 2, None, "everything-big"),
                    ("backup-model", 1, "big-model", None)]
    assert all(s.attributes[c.LLM_PURPOSE] == "step" for s in chats)
    assert [a.model for a in llm.last_attempts] == ["big-model", "big-model", "backup-model"]


async def test_plan_and_replan_reach_the_planner_rule_through_resilient_llm(memory_handle) -> None:  # noqa: F811
    world = World()
    planner = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  answer="#E2"),
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), answer="#b", cause="unknown customer"),
    ], model="planner-model")
    default = ScriptedLLM(policy=lambda m, t: "the default model answered", model="default-model")
    llm = _resilient(Router(default, [Route.for_purposes(planner, c.LLMPurpose.PLAN, c.LLMPurpose.REPLAN)]))

    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("ghost's spend")

    assert result.ok, result.error
    assert len(planner.calls) == 2 and default.calls == []
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    chats = _chats(spans)
    assert [s.attributes[c.LLM_PURPOSE] for s in chats] == ["plan", "replan"]
    for s in chats:
        assert s.attributes[c.LLM_ROUTE_RULE] == "plan+replan"
        assert s.attributes[c.LLM_ROUTE_MODEL] == s.attributes[c.GEN_AI_REQUEST_MODEL] == "planner-model"
        assert _parent(spans, s).name.split()[0] == s.attributes[c.LLM_PURPOSE], "under its plan/replan span"


async def test_a_direct_call_names_its_purpose_and_a_wrapper_without_one_keeps_the_kernels() -> None:
    summary = ScriptedLLM(policy=lambda m, t: "from the summary model", model="s")
    default = ScriptedLLM(policy=lambda m, t: "from the default model", model="d")
    llm = _resilient(Router(default, [Route.for_purposes(summary, c.LLMPurpose.SUMMARY)]))
    from kernel.types import Message

    question = [Message(role="user", content="q")]
    assert (await llm.complete(question, purpose="summary")).text == "from the summary model"
    assert (await llm.complete(question)).text == "from the default model"

    class Forwarding:
        """A user's wrapper that knows nothing of purposes."""

        emits_chat_spans = True

        async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
            return await llm.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)

    summarise = llm_summariser(Forwarding())
    assert await summarise("long text") == "from the summary model"


async def test_a_routed_chain_that_gives_up_falls_back_to_the_next_member(memory_handle) -> None:  # noqa: F811
    from kernel.llm import LLMError

    def overloaded(messages, tools):
        raise LLMError("overloaded", error_type="overloaded_error", retryable=True, status_code=529)

    def bad_request(messages, tools):
        raise LLMError("bad request", error_type="invalid_request_error", status_code=400)

    down = ScriptedLLM(policy=overloaded, model="down-model")
    backup = ScriptedLLM(policy=lambda m, t: "the backup answered", model="backup-model")
    inner = _resilient(down)
    llm = _resilient(Router(inner, [Route.for_purposes(inner, c.LLMPurpose.STEP, name="steps")]), backup)

    result = await Agent("desk", "1", llm, [], mode="function_calling").run("hello")

    assert result.ok and result.answer == "the backup answered", result.error
    assert len(down.calls) == 2 and len(backup.calls) == 1
    chats = _chats(list(memory_handle.memory_exporter.get_finished_spans()))
    seen = [(s.attributes[c.GEN_AI_REQUEST_MODEL], s.attributes.get(c.LLM_ROUTE_RULE),
             s.attributes.get(c.LLM_FALLBACK_FROM)) for s in chats]
    assert seen == [("down-model", "steps", None), ("down-model", "steps", None),
                    ("backup-model", None, "down-model")], "the inner chain's own spans, then the fallback"

    rejected = ScriptedLLM(policy=bad_request, model="strict-model")
    unused = ScriptedLLM(policy=lambda m, t: "never", model="unused-model")
    llm = _resilient(Router(_resilient(rejected), []), unused)
    result = await Agent("desk", "1", llm, [], mode="function_calling").run("hello")
    assert result.stop_reason.value == "llm_unavailable" and unused.calls == [], "a bad request is not retried elsewhere"
