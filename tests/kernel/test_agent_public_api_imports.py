"""Users build agents from `kernel`'s top level: every advertised name must resolve, and a
whole agent must be buildable and runnable from those names alone."""

from __future__ import annotations

import pytest

import kernel


def test_every_exported_name_resolves() -> None:
    for name in kernel.__all__:
        assert getattr(kernel, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        kernel.NoSuchThing  # noqa: B018


async def test_a_user_can_build_and_run_an_agent_from_top_level_names() -> None:
    from kernel import Agent, Budget, LoopGuard, ScriptedLLM, StopReason, tool

    @tool
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    llm = ScriptedLLM(['Action: echo\nAction Input: {"text": "hi"}', "Final Answer: hi"])
    agent = Agent("echo-bot", "0.1", llm, [echo], budget=Budget(max_steps=5), loop_guard=LoopGuard(window=2))
    result = await agent.run("say hi")
    assert result.ok and result.stop_reason is StopReason.FINISH and result.answer == "hi"


def test_all_lists_exactly_the_lazy_exports() -> None:
    assert sorted(kernel.__all__) == sorted(kernel._EXPORTS)
