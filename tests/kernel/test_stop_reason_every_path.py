"""Every stop reason the ReAct loop can reach is reached by a real scripted run (real parser,
real dispatch, real tools), with ok=False and no answer except for `finish`."""

from __future__ import annotations

import asyncio
import time

import pytest

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import Delayed, LLMUnavailable, ScriptedLLM
from kernel.llm.base import AttemptRecord
from kernel.loop_guard import LoopGuard
from kernel.parsing import EXPECTED_FORMAT
from kernel.types import LLMResponse, Message, RunResult, Usage
from tests.support.scripted_runs import act, add, fail, final, hang, paid
from tracer.conventions import ParseStatus, StepKind, StopReason

TOOLS = [add, fail, hang, paid]


def agent(llm, **kw) -> Agent:
    kw.setdefault("loop_guard", LoopGuard(window=0))
    return Agent("tester", "1.0", llm, TOOLS, **kw)


def assert_failed(result: RunResult, reason: StopReason) -> None:
    assert result.stop_reason == reason, (result.stop_reason, result.error)
    assert result.ok is False
    assert result.answer is None
    assert result.error, "a failed run must say why"
    # the JSON form is what gets stored; it must survive every stop reason
    assert RunResult.from_json(result.to_json()) == result


async def test_finish_is_the_only_ok_stop() -> None:
    llm = ScriptedLLM([act("add", a=2, b=3), final("5")])
    result = await agent(llm).run("what is 2+3?")
    assert result.ok is True and result.stop_reason == StopReason.FINISH
    assert result.answer == "5" and result.error is None
    assert [s.kind for s in result.steps] == [StepKind.TOOL, StepKind.FINISH]
    assert result.steps[0].observations[0].content == "5"
    assert result.steps[0].observation_text == "5"
    assert result.steps[1].answer == "5"
    # the model saw the observation on its second call
    assert llm.calls[1].messages[-1] == Message(role="user", content="Observation: 5")


async def test_max_steps() -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("add", a=next(counter), b=1))
    result = await agent(llm, budget=Budget(max_steps=3)).run("loop forever")
    assert_failed(result, StopReason.MAX_STEPS)
    assert len(result.steps) == 3 and len(llm.calls) == 3


async def test_token_budget_input() -> None:
    reply = LLMResponse(text=act("add", a=1, b=1), usage=Usage(input_tokens=40, output_tokens=5))
    llm = ScriptedLLM(policy=lambda m, t: reply)
    result = await agent(llm, budget=Budget(max_input_tokens=100)).run("t")
    assert_failed(result, StopReason.TOKEN_BUDGET)
    assert len(llm.calls) == 3 and result.usage.input_tokens == 120
    assert "input_tokens" in result.error


async def test_token_budget_output_caps_max_tokens() -> None:
    reply = LLMResponse(text=act("add", a=1, b=1), usage=Usage(input_tokens=1, output_tokens=6))
    llm = ScriptedLLM(policy=lambda m, t: reply)
    result = await agent(llm, budget=Budget(max_output_tokens=10), max_tokens=100).run("t")
    assert_failed(result, StopReason.TOKEN_BUDGET)
    assert [c.max_tokens for c in llm.calls] == [10, 4]
    assert "output_tokens" in result.error


async def test_cost_budget_from_model_prices() -> None:
    # gpt-4o-mini input is priced per million tokens by tracer.pricing; 1M tokens costs > $0.10
    reply = LLMResponse(text=act("add", a=1, b=1), model="gpt-4o-mini",
                        usage=Usage(input_tokens=1_000_000, output_tokens=0))
    llm = ScriptedLLM(policy=lambda m, t: reply)
    result = await agent(llm, budget=Budget(max_cost_usd=0.10)).run("t")
    assert_failed(result, StopReason.COST_BUDGET)
    assert len(llm.calls) == 1 and result.cost_usd > 0.10
    assert result.models == ["gpt-4o-mini"] and result.unpriced_models == []


async def test_cost_budget_counts_tool_prices() -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("paid", q=str(next(counter))))
    result = await agent(llm, budget=Budget(max_cost_usd=1.0)).run("t")
    assert_failed(result, StopReason.COST_BUDGET)
    assert len(result.steps) == 3  # 0.4 + 0.4 < 1.0 <= 1.2
    assert result.cost_usd == pytest.approx(1.2)
    assert result.steps[0].cost_usd == 0.4
    assert result.unpriced_models == ["scripted"], "unknown model price must be reported, not hidden"


async def test_timeout_during_a_hanging_llm_call() -> None:
    llm = ScriptedLLM([Delayed(final("too late"), 30)])
    started = time.monotonic()
    result = await agent(llm, budget=Budget(max_seconds=0.3)).run("t")
    assert time.monotonic() - started < 5
    assert_failed(result, StopReason.TIMEOUT)
    assert "LLM call" in result.error


async def test_timeout_during_a_hanging_tool() -> None:
    llm = ScriptedLLM([act("hang"), final("never")])
    started = time.monotonic()
    result = await agent(llm, budget=Budget(max_seconds=1.0)).run("t")
    assert time.monotonic() - started < 5
    assert_failed(result, StopReason.TIMEOUT)
    assert "hang" in result.error
    assert result.steps[0].calls[0].name == "hang"


async def test_tool_error_exhausted() -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("fail", x=next(counter)))
    result = await agent(llm, budget=Budget(max_consecutive_errors=2)).run("t")
    assert_failed(result, StopReason.TOOL_ERROR_EXHAUSTED)
    assert len(result.steps) == 2
    assert all(s.observations[0].is_error for s in result.steps)
    assert "boom 0" in result.steps[0].observation_text


async def test_unparsable_exhausted_feeds_back_the_exact_error() -> None:
    llm = ScriptedLLM(["I think the answer is blue", "still no format", "nope"])
    result = await agent(llm, budget=Budget(max_consecutive_unparsable=3)).run("t")
    assert_failed(result, StopReason.UNPARSABLE_EXHAUSTED)
    assert [s.kind for s in result.steps] == [StepKind.FORMAT_ERROR] * 3
    assert all(s.parse == ParseStatus.UNPARSABLE for s in result.steps)
    feedback = result.steps[0].observation_text
    assert "found no `Action:` line" in feedback and EXPECTED_FORMAT in feedback
    assert llm.calls[1].messages[-1].content == feedback


async def test_llm_unavailable() -> None:
    attempts = [AttemptRecord("m1", "p", 1, None, "rate_limited", 0.1)]
    llm = ScriptedLLM([act("add", a=1, b=2), LLMUnavailable(attempts)])
    result = await agent(llm).run("t")
    assert_failed(result, StopReason.LLM_UNAVAILABLE)
    assert "rate_limited" in result.error
    assert len(result.steps) == 1


async def test_cancelled_by_event_before_start() -> None:
    cancel = asyncio.Event()
    cancel.set()
    llm = ScriptedLLM([final("x")])
    result = await agent(llm).run("t", cancel=cancel)
    assert_failed(result, StopReason.CANCELLED)
    assert llm.calls == []


async def test_cancelled_by_event_during_a_hanging_call() -> None:
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, cancel.set)
    llm = ScriptedLLM([Delayed(final("x"), 30)])
    started = time.monotonic()
    result = await agent(llm).run("t", cancel=cancel)
    assert time.monotonic() - started < 5
    assert_failed(result, StopReason.CANCELLED)


async def test_cancelled_by_task_cancellation() -> None:
    llm = ScriptedLLM([act("hang"), final("x")])
    run = asyncio.create_task(agent(llm).run("t"))
    await asyncio.sleep(0.2)
    run.cancel()
    result = await run
    assert_failed(result, StopReason.CANCELLED)
    assert not run.cancelled()


class ReturnsWrongType:
    """An LLM adapter that breaks the contract (returns a str): a bug, not a model failure."""

    model = "broken"

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
        return "not an LLMResponse"


async def test_internal_error_is_recorded_not_raised() -> None:
    result = await agent(ReturnsWrongType()).run("t")
    assert_failed(result, StopReason.INTERNAL_ERROR)
    assert result.error.startswith("TypeError") and "LLMResponse" in result.error


async def test_internal_error_from_an_adapter_raising_a_non_llm_error() -> None:
    llm = ScriptedLLM([ValueError("adapter bug")])
    result = await agent(llm).run("t")
    assert_failed(result, StopReason.INTERNAL_ERROR)
    assert result.error == "ValueError: adapter bug"


async def test_a_task_that_is_not_a_string_is_an_internal_error_not_an_exception() -> None:
    result = await agent(ScriptedLLM(["Final Answer: x"])).run(12345)  # type: ignore[arg-type]
    assert result.ok is False and result.stop_reason == StopReason.INTERNAL_ERROR
    assert "ValidationError" in result.error
