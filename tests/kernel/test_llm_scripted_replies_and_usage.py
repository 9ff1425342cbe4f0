"""ScriptedLLM must say exactly what it was told, in order, and never report usage it lacks."""

from __future__ import annotations

import asyncio

import pytest

from kernel.llm import LLM, Delayed, ScriptedLLM, ScriptExhausted, estimate_tokens
from kernel.types import LLMResponse, Message, ToolCall, Usage


def _msgs(text: str = "hi") -> list[Message]:
    return [Message(role="system", content="be brief"), Message(role="user", content=text)]


async def test_replies_are_returned_in_order_with_kinds_respected() -> None:
    given = LLMResponse(
        tool_calls=[ToolCall(id="c1", name="search", arguments={"q": "x"})],
        usage=Usage(input_tokens=7, output_tokens=3),
    )
    llm = ScriptedLLM(["first", given, ValueError("boom")], model="m1")
    assert isinstance(llm, LLM)

    r1 = await llm.complete(_msgs())
    assert r1.text == "first" and r1.model == "m1" and r1.provider == "scripted"
    assert r1.finish_reason == "stop"

    r2 = await llm.complete(_msgs())
    assert r2.tool_calls == given.tool_calls
    assert r2.usage == Usage(input_tokens=7, output_tokens=3)  # reported usage kept, not estimated
    assert r2.finish_reason == "tool_calls"
    assert r2 is not given  # a copy: the script can be reused

    with pytest.raises(ValueError, match="boom"):
        await llm.complete(_msgs())
    assert llm.remaining == 0


async def test_running_out_of_replies_is_a_clear_error() -> None:
    llm = ScriptedLLM(["only"])
    await llm.complete(_msgs())
    with pytest.raises(ScriptExhausted, match="1 reply.*called 2"):
        await llm.complete(_msgs())


async def test_usage_is_estimated_and_flagged_when_missing() -> None:
    llm = ScriptedLLM(["x" * 40])
    resp = await llm.complete([Message(role="user", content="y" * 81)])
    assert resp.usage is not None
    assert resp.usage.estimated is True
    assert resp.usage.output_tokens == 10
    assert resp.usage.input_tokens == 21  # ceil(81 / 4)
    assert estimate_tokens("") == 0


async def test_every_call_is_recorded_as_a_copy() -> None:
    llm = ScriptedLLM(["a", "b"])
    msgs = _msgs("first question")
    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    await llm.complete(msgs, tools, temperature=0.0, max_tokens=50)
    msgs.append(Message(role="user", content="mutated later"))
    await llm.complete(msgs)
    assert len(llm.calls) == 2
    assert [m.content for m in llm.calls[0].messages] == ["be brief", "first question"]
    assert llm.calls[0].tools == tools and llm.calls[0].temperature == 0.0 and llm.calls[0].max_tokens == 50
    assert llm.calls[1].messages[-1].content == "mutated later" and llm.calls[1].tools is None


async def test_policy_sees_the_conversation_sync_and_async() -> None:
    def echo(messages: list[Message], tools: list[dict] | None) -> str:
        return f"echo:{messages[-1].content}:{len(tools or [])}"

    async def apolicy(messages: list[Message], tools: list[dict] | None) -> LLMResponse:
        return LLMResponse(text="async " + (messages[-1].content or ""))

    assert (await ScriptedLLM(policy=echo).complete(_msgs("q"), [{}])).text == "echo:q:1"
    assert (await ScriptedLLM(policy=apolicy).complete(_msgs("q"))).text == "async q"


async def test_delayed_replies_wait_and_can_be_cancelled_by_a_timeout() -> None:
    llm = ScriptedLLM([Delayed("slow", 5.0), ("quick", 0.01)])
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(llm.complete(_msgs()), timeout=0.05)
    assert (await llm.complete(_msgs())).text == "quick"


def test_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError):
        ScriptedLLM()
    with pytest.raises(ValueError):
        ScriptedLLM(["a"], policy=lambda m, t: "b")


async def test_unsupported_reply_type_is_reported_not_swallowed() -> None:
    llm = ScriptedLLM([42])
    with pytest.raises(TypeError, match="int"):
        await llm.complete(_msgs())
