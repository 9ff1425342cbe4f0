"""Compaction must elide old long observations only: never the system prompt, the task or the
latest observation, and a failing summariser must fall back to the marker."""

from __future__ import annotations

from kernel.context import Context, ContextPolicy
from kernel.types import Message, ToolCall


def chars_estimator(messages: list[Message]) -> int:
    """Deterministic estimate (1 token per 4 chars) so thresholds are exact in tests."""
    return sum(len(m.content or "") for m in messages) // 4


def make(mode: str = "text", **policy) -> Context:
    return Context(
        system_prompt="SYSTEM " * 50,
        task="TASK: find it",
        mode=mode,
        tool_prompt="TOOLS: search(q)",
        tool_schemas=[{"type": "function", "function": {"name": "search", "parameters": {}}}],
        policy=ContextPolicy(**{"context_limit_tokens": 1000, "watermark": 0.5, "min_elide_tokens": 50,
                                **policy}),
        estimate=chars_estimator,
    )


def fill(ctx: Context, steps: int, size: int = 800) -> None:
    for step in range(1, steps + 1):
        c = ToolCall(id=f"c{step}", name="search", arguments={"q": step})
        ctx.add_assistant(f"Action {step}", [c])
        ctx.add_observations(step, [(c, f"obs{step} " + "x" * size)])


def test_text_mode_puts_tools_in_system_prompt_and_no_tools_param() -> None:
    ctx = make("text")
    assert ctx.messages[0].role == "system" and "TOOLS: search(q)" in ctx.messages[0].content
    assert ctx.messages[1] == Message(role="user", content="TASK: find it")
    assert ctx.tools is None
    fill(ctx, 1, size=10)
    assert ctx.messages[-1].role == "user" and ctx.messages[-1].content.startswith("Observation: obs1")


def test_function_calling_mode_uses_tool_messages_and_tools_param() -> None:
    ctx = make("function_calling")
    assert "TOOLS:" not in ctx.messages[0].content
    assert ctx.tools and ctx.tools[0]["function"]["name"] == "search"
    fill(ctx, 1, size=10)
    assistant, tool_msg = ctx.messages[-2], ctx.messages[-1]
    assert assistant.tool_calls[0].id == "c1"
    assert tool_msg.role == "tool" and tool_msg.tool_call_id == "c1" and tool_msg.name == "search"


async def test_below_watermark_nothing_is_compacted() -> None:
    ctx = make()
    fill(ctx, 1, size=100)
    assert await ctx.compact() == []


async def test_compaction_spares_system_task_and_latest_observation() -> None:
    ctx = make()
    system_before = ctx.messages[0].content
    fill(ctx, 4)
    assert ctx.prompt_tokens() > 500
    done = await ctx.compact()
    assert done, "over the watermark something must be compacted"
    assert ctx.prompt_tokens() <= 500
    assert ctx.messages[0].content == system_before
    assert ctx.messages[1].content == "TASK: find it"
    assert ctx.messages[-1].content.startswith("Observation: obs4 xxxx")
    assert all(c.step != 4 for c in done)
    assert done[0].step == 1, "oldest first"
    assert "elided" in ctx.messages[done[0].message_index].content
    assert done[0].tokens_after < done[0].tokens_before


async def test_compaction_never_touches_latest_even_if_still_over() -> None:
    ctx = make(min_elide_tokens=10_000)  # nothing old is "long": nothing may be elided
    fill(ctx, 3)
    assert await ctx.compact() == []
    assert ctx.messages[-1].content.startswith("Observation: obs3 xxxx")


async def test_summariser_is_used_sync_and_async() -> None:
    ctx = make(summariser=lambda text: "short summary")
    fill(ctx, 3)
    done = await ctx.compact()
    assert done and done[0].summarised
    assert "short summary" in ctx.messages[done[0].message_index].content

    async def asummary(text: str) -> str:
        return "async summary"

    ctx2 = make(summariser=asummary)
    fill(ctx2, 3)
    done2 = await ctx2.compact()
    assert "async summary" in ctx2.messages[done2[0].message_index].content


async def test_failing_summariser_falls_back_to_marker_and_records_error() -> None:
    def broken(text: str) -> str:
        raise RuntimeError("summariser down")

    ctx = make(summariser=broken)
    fill(ctx, 3)
    done = await ctx.compact()
    assert done and not done[0].summarised
    assert done[0].error == "RuntimeError: summariser down"
    assert "elided" in ctx.messages[done[0].message_index].content


async def test_compaction_is_not_repeated_on_already_compacted_slots() -> None:
    ctx = make()
    fill(ctx, 4)
    first = await ctx.compact()
    fill(ctx, 0)
    again = await ctx.compact()
    assert {c.message_index for c in first}.isdisjoint({c.message_index for c in again})
    assert len(ctx.compactions) == len(first) + len(again)


def test_prompt_is_a_copy() -> None:
    ctx = make()
    prompt = ctx.prompt()
    prompt[0].content = "hacked"
    assert ctx.messages[0].content != "hacked"
