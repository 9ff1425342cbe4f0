"""A compaction summary is an LLM call like any other: its tokens are in the run's usage (so token
and cost limits see them) and its chat span's tokens add up with the steps' to the run's total."""

from __future__ import annotations

import json

from kernel import Agent, Budget, Route, Router, llm_summariser
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from kernel.types import LLMResponse, Usage
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture
from tracer import conventions as c


@tool
async def page(n: int) -> str:
    """Return page n of a long document."""
    return f"PAGE {n} " + ("lorem ipsum " * 150)


def act(n: int) -> str:
    return f"Thought: read page {n}\nAction: page\nAction Input: {json.dumps({'n': n})}"


async def test_summary_tokens_are_in_the_run_usage_and_match_the_spans(memory_handle) -> None:  # noqa: F811
    steps = ScriptedLLM([act(1), act(2), act(3), "Final Answer: read"], model="gpt-4o")
    cheap = ScriptedLLM(policy=lambda m, t: LLMResponse(text="facts of the page", model="gpt-4o-mini",
                                                        usage=Usage(input_tokens=777, output_tokens=5)))
    router = Router(steps, [Route.for_purposes(cheap, c.LLMPurpose.SUMMARY)])
    agent = Agent("reader", "1", router, [page], summariser=llm_summariser(router),
                  budget=Budget(context_watermark_tokens=900), compaction_min_tokens=100)

    result = await agent.run("read the document")

    assert result.ok, result.error
    assert len(cheap.calls) >= 1
    step_input = sum(s.usage.input_tokens for s in result.steps)
    assert result.usage.input_tokens == step_input + 777 * len(cheap.calls)
    assert "gpt-4o-mini" in result.models
    chats = [s for s in memory_handle.memory_exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert sum(s.attributes[c.GEN_AI_USAGE_INPUT_TOKENS] for s in chats) == result.usage.input_tokens
    assert result.cost_usd > sum(s.cost_usd for s in result.steps), "the summaries are priced into the run"


async def test_a_token_budget_sees_the_summaries() -> None:
    steps = ScriptedLLM([act(n) for n in range(1, 8)] + ["Final Answer: read"])
    cheap = ScriptedLLM(policy=lambda m, t: LLMResponse(text="facts", usage=Usage(input_tokens=50_000, output_tokens=1)))
    router = Router(steps, [Route.for_purposes(cheap, c.LLMPurpose.SUMMARY)])
    agent = Agent("reader", "1", router, [page], summariser=llm_summariser(router),
                  budget=Budget(context_watermark_tokens=900, max_input_tokens=60_000), compaction_min_tokens=100)

    result = await agent.run("read the document")

    assert result.stop_reason == c.StopReason.TOKEN_BUDGET and not result.ok
    assert len(steps.calls) < 8, "the summary's tokens ended the run before the script did"
