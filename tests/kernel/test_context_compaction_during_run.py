"""During a long run the prompt must be compacted past the watermark, keeping the system prompt
and the latest observation verbatim, and the run must still finish."""

from __future__ import annotations

import json

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from kernel.types import LLMResponse, ToolCall


@tool
async def page(n: int) -> str:
    """Return page n of a long document."""
    return f"PAGE {n} " + ("lorem ipsum " * 120)


def act(n: int) -> str:
    return f"Thought: read page {n}\nAction: page\nAction Input: {json.dumps({'n': n})}"


async def test_old_observations_are_elided_system_and_latest_kept() -> None:
    llm = ScriptedLLM([act(1), act(2), act(3), act(4), "Final Answer: read it all"])
    agent = Agent("a", "1", llm, [page], context_limit_tokens=2000, compaction_watermark=0.5,
                  compaction_min_tokens=100, observation_max_tokens=1000)
    result = await agent.run("summarise the document")
    assert result.ok and result.answer == "read it all"
    system = llm.calls[0].messages[0].content
    last = llm.calls[-1].messages
    assert last[0].content == system
    assert last[1].content == "summarise the document"
    assert last[-1].content.startswith("Observation: PAGE 4 lorem ipsum"), "latest observation kept whole"
    user_texts = [m.content or "" for m in last if m.role == "user"]
    assert any(t.startswith("Observation: [observation from step 1 elided") for t in user_texts)
    assert "PAGE 1 lorem" not in "".join(m.content or "" for m in last)
    # the record keeps what the model saw at the time, uncompacted
    assert result.steps[0].observation_text.startswith("PAGE 1 lorem")


async def test_summariser_output_replaces_old_observations_in_function_calling_mode() -> None:
    seen: list[str] = []

    async def summarise(text: str) -> str:
        seen.append(text)
        return f"summary of {text[:6]}"

    replies = [LLMResponse(tool_calls=[ToolCall(id=f"c{n}", name="page", arguments={"n": n})]) for n in (1, 2, 3)]
    llm = ScriptedLLM([*replies, LLMResponse(text="done")])
    agent = Agent("a", "1", llm, [page], mode="function_calling", context_limit_tokens=1200,
                  compaction_watermark=0.5, compaction_min_tokens=100, summariser=summarise)
    result = await agent.run("t")
    assert result.ok and result.answer == "done"
    tool_msgs = [m for m in llm.calls[-1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["c1", "c2", "c3"], "every call still answered"
    assert tool_msgs[0].content.startswith("[summary of observation from step 1] summary of PAGE 1")
    assert tool_msgs[-1].content.startswith("PAGE 3 lorem"), "latest observation kept whole"
    assert seen and seen[0].startswith("PAGE 1")


async def test_a_hanging_summariser_is_bounded_by_the_wall_clock_budget() -> None:
    import asyncio
    import time

    from kernel.budgets import Budget
    from tracer.conventions import StopReason

    async def stuck(text: str) -> str:
        await asyncio.sleep(60)
        return "never"

    llm = ScriptedLLM([act(1), act(2), act(3), "Final Answer: x"])
    agent = Agent("a", "1", llm, [page], context_limit_tokens=600, compaction_watermark=0.5,
                  compaction_min_tokens=100, summariser=stuck, budget=Budget(max_seconds=0.5))
    started = time.monotonic()
    result = await agent.run("t")
    assert time.monotonic() - started < 5
    assert result.stop_reason == StopReason.TIMEOUT and result.ok is False
    assert "compaction" in result.error
