"""A RunResult (steps, calls, observations, usage, enums) must survive JSON exactly: stored runs
are inspected, diffed and replayed from that form."""

from __future__ import annotations

import json

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from kernel.types import LLMResponse, RunResult, ToolCall, Usage
from tracer.conventions import StepKind, StopReason, ToolDecision


@tool(price_usd=0.01)
async def weather(city: str) -> dict:
    """Weather for a city."""
    return {"city": city, "temp_c": 21.5, "sky": "clear ☀"}


async def test_finished_run_round_trips() -> None:
    llm = ScriptedLLM(
        [
            LLMResponse(
                text="checking",
                tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Zürich"})],
                model="gpt-4o-mini",
                usage=Usage(input_tokens=120, output_tokens=12, cached_input_tokens=100),
            ),
            "It is 21.5 °C and clear in Zürich.",
        ]
    )
    result = await Agent("weather-bot", "2.1", llm, [weather], mode="function_calling").run(
        "Weather in Zürich?", conversation_id="conv-9", user_id="user-3"
    )
    assert result.ok
    text = result.to_json()
    back = RunResult.from_json(text)
    assert back == result
    assert back.stop_reason is StopReason.FINISH
    assert back.steps[0].kind is StepKind.TOOL
    assert back.steps[0].observations[0].decision is ToolDecision.EXECUTED
    assert back.steps[0].usage.cached_input_tokens == 100
    data = json.loads(text)
    assert data["stop_reason"] == "finish" and data["trace_id"] is None
    assert data["steps"][0]["observations"][0]["content"] == json.dumps(
        {"city": "Zürich", "temp_c": 21.5, "sky": "clear ☀"}, ensure_ascii=False
    )
    assert data["models"] == ["gpt-4o-mini", "scripted"]
    assert data["agent"] == "weather-bot" and data["version"] == "2.1"


async def test_failed_run_round_trips_with_error_and_no_answer() -> None:
    llm = ScriptedLLM(policy=lambda m, t: "no format here")
    result = await Agent("a", "1", llm, budget=Budget(max_consecutive_unparsable=2)).run("t")
    back = RunResult.from_json(result.to_json().encode())
    assert back == result and back.ok is False and back.answer is None
    assert back.stop_reason is StopReason.UNPARSABLE_EXHAUSTED and back.error
