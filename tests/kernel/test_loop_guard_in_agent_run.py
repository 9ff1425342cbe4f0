"""In a real run, a repeated identical call must not execute again (a `loop_guard` step), a model
ignoring the warning must be stopped, and with error-ack on a finish right after a tool error is
refused until the model acts on it."""

from __future__ import annotations

import json

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.loop_guard import LoopGuard
from kernel.tools import tool
from kernel.types import RunResult
from tracer.conventions import StepKind, StopReason


def act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def make_counter():
    executions: list[str] = []

    @tool
    async def lookup(q: str) -> str:
        """Look something up."""
        executions.append(q)
        return f"facts about {q}"

    return lookup, executions


@tool
async def flaky(x: int) -> str:
    """Fails for negative x."""
    if x < 0:
        raise ValueError("x must be >= 0")
    return f"ok {x}"


async def test_identical_call_gets_a_warning_instead_of_executing() -> None:
    lookup, executions = make_counter()
    llm = ScriptedLLM([act("lookup", q="paris"), act("lookup", q="paris"), "Final Answer: Paris"])
    result = await Agent("a", "1", llm, [lookup], loop_guard=LoopGuard(window=3)).run("t")
    assert result.ok and result.answer == "Paris"
    assert executions == ["paris"], "the repeat must not run the tool"
    guarded = result.steps[1]
    assert guarded.kind == StepKind.LOOP_GUARD
    assert "NOT executed" in guarded.observation_text and "facts about paris" in guarded.observation_text
    assert llm.calls[2].messages[-1].content == "Observation: " + guarded.observation_text


async def test_different_arguments_are_not_a_loop() -> None:
    lookup, executions = make_counter()
    llm = ScriptedLLM([act("lookup", q="a"), act("lookup", q="b"), "Final Answer: x"])
    result = await Agent("a", "1", llm, [lookup]).run("t")
    assert executions == ["a", "b"] and [s.kind for s in result.steps][:2] == [StepKind.TOOL] * 2


async def test_a_model_ignoring_the_warning_is_stopped() -> None:
    lookup, executions = make_counter()
    llm = ScriptedLLM(policy=lambda m, t: act("lookup", q="same"))
    agent = Agent("a", "1", llm, [lookup], loop_guard=LoopGuard(window=5),
                  budget=Budget(max_steps=20, max_consecutive_errors=2))
    result = await agent.run("t")
    assert result.ok is False and result.stop_reason == StopReason.TOOL_ERROR_EXHAUSTED
    assert result.answer is None
    assert executions == ["same"]
    kinds = [s.kind for s in result.steps]
    assert kinds[0] == StepKind.TOOL and set(kinds[1:]) == {StepKind.LOOP_GUARD}
    assert "LOOP DETECTED" in result.steps[-1].observation_text
    assert len(result.steps) < 20, "stopped by the error streak, not by max_steps"


async def test_error_ack_refuses_finish_until_the_model_acts_on_the_error() -> None:
    llm = ScriptedLLM(
        [
            act("flaky", x=-1),
            "Final Answer: it worked",  # refused: the tool failed and the model ignored it
            act("flaky", x=1),
            "Final Answer: ok 1",
        ]
    )
    agent = Agent("a", "1", llm, [flaky], loop_guard=LoopGuard(require_error_ack=True))
    result = await agent.run("t")
    assert result.ok and result.answer == "ok 1"
    assert [s.kind for s in result.steps] == [StepKind.TOOL, StepKind.LOOP_GUARD, StepKind.TOOL, StepKind.FINISH]
    refused = result.steps[1]
    assert refused.answer == "it worked"
    assert "cannot finish yet" in refused.observation_text and "x must be >= 0" in refused.observation_text
    assert llm.calls[2].messages[-1].content == refused.observation_text
    assert RunResult.from_json(result.to_json()) == result


async def test_without_error_ack_a_finish_after_an_error_is_accepted() -> None:
    llm = ScriptedLLM([act("flaky", x=-1), "Final Answer: gave up"])
    result = await Agent("a", "1", llm, [flaky]).run("t")
    assert result.ok and result.answer == "gave up"
