"""A budget hit in the middle of a run that was going well must end it with ok=False, no answer
(even though the model was about to answer) and the steps done so far recorded."""

from __future__ import annotations

import json

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from kernel.types import LLMResponse, Usage
from tracer.conventions import StepKind, StopReason


@tool
async def search(q: str) -> str:
    """Search."""
    return f"result for {q}"


def act(q: str) -> LLMResponse:
    text = f"Thought: search\nAction: search\nAction Input: {json.dumps({'q': q})}"
    return LLMResponse(text=text, usage=Usage(input_tokens=300, output_tokens=20))


async def test_token_budget_hit_before_the_answer_gives_no_half_answer() -> None:
    llm = ScriptedLLM([act("a"), act("b"), act("c"), LLMResponse(text="Final Answer: 42")])
    result = await Agent("a", "1", llm, [search], budget=Budget(max_input_tokens=900)).run("t")
    assert result.ok is False
    assert result.stop_reason == StopReason.TOKEN_BUDGET
    assert result.answer is None
    assert len(result.steps) == 3 and all(s.kind == StepKind.TOOL for s in result.steps)
    assert llm.remaining == 1, "the answering call was never made"
    assert result.usage.input_tokens == 900
    assert result.error == "input_tokens limit reached: used 900 of 900"


async def test_steps_budget_counts_format_errors_and_guard_steps_too() -> None:
    llm = ScriptedLLM(["garbage", act("a"), act("a"), LLMResponse(text="Final Answer: 42")])
    result = await Agent("a", "1", llm, [search], budget=Budget(max_steps=3)).run("t")
    assert result.stop_reason == StopReason.MAX_STEPS and result.answer is None
    assert [s.kind for s in result.steps] == [StepKind.FORMAT_ERROR, StepKind.TOOL, StepKind.LOOP_GUARD]


async def test_generous_budget_lets_the_same_run_finish() -> None:
    llm = ScriptedLLM([act("a"), act("b"), act("c"), LLMResponse(text="Final Answer: 42")])
    result = await Agent("a", "1", llm, [search], budget=Budget(max_input_tokens=2000)).run("t")
    assert result.ok and result.answer == "42"
