"""Every stop reason the kernel can reach leaves an exact trace: the run span carries ok,
stop_reason and steps, and every reason but `finish` is ERROR with error.type = the reason, as is
the step (or tool / LLM call) the run stopped in. Limits found exhausted before a step starts are
recorded by a `budget_check` directly under the run (no step span for a step that never ran)."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import StatusCode

from kernel.budgets import Budget
from kernel.llm import Delayed, LLMUnavailable, ScriptedLLM
from kernel.llm.base import AttemptRecord
from kernel.types import LLMResponse, RunResult, Usage
from tests.tracer.kernel.kernel_runs import act, agent, final, named, one, outline
from tracer import conventions as c
from tracer.conventions import StopReason


def _run_span(handle, result: RunResult):
    finished = handle.memory_exporter.get_finished_spans()
    run = one(finished, "invoke_agent tester")
    a = run.attributes
    assert a[c.RUN_OK] is result.ok and a[c.RUN_STOP_REASON] == result.stop_reason.value
    assert a[c.RUN_STEPS] == len(result.steps)
    assert a[c.USAGE_INPUT_TOKENS] == result.usage.input_tokens
    assert a[c.USAGE_OUTPUT_TOKENS] == result.usage.output_tokens
    assert a[c.USAGE_COST_USD] == pytest.approx(result.cost_usd)
    if result.ok:
        assert run.status.status_code is StatusCode.UNSET and c.ERROR_TYPE not in a
    else:
        assert run.status.status_code is StatusCode.ERROR
        assert a[c.ERROR_TYPE] == result.stop_reason.value
        assert run.status.description == result.error
        assert c.RUN_ANSWER not in a
    assert result.trace_id == format(run.context.trace_id, "032x")
    return finished


def _step_tree(n: int, *, tool: str | None = "add") -> list[str]:
    lines = []
    for i in range(1, n + 1):
        lines += [f"  step {i}", "    budget_check", "    chat scripted [CLIENT]"]
        if tool:
            lines += [f"    execute_tool {tool}", "    truncate_observation"]
    return lines


async def test_finish(memory_handle) -> None:
    result = await agent(ScriptedLLM([final("x")])).run("t")
    assert result.stop_reason == StopReason.FINISH
    finished = _run_span(memory_handle, result)
    assert outline(finished) == ["invoke_agent tester", *_step_tree(1, tool=None)]


async def test_max_steps(memory_handle) -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("add", a=next(counter), b=1))
    result = await agent(llm, budget=Budget(max_steps=2)).run("t")
    assert result.stop_reason == StopReason.MAX_STEPS
    finished = _run_span(memory_handle, result)
    assert outline(finished) == ["invoke_agent tester !max_steps", *_step_tree(2), "  budget_check"]
    last_check = max(named(finished, "budget_check"), key=lambda s: s.start_time)
    assert last_check.attributes[c.BUDGET_EXHAUSTED] == "max_steps"
    assert last_check.attributes[c.budget_used("steps")] == 2 and last_check.attributes[c.BUDGET_HEADROOM] == 0.0
    assert one(finished, "invoke_agent tester").attributes[c.BUDGET_MAX_STEPS] == 2


async def test_token_budget(memory_handle) -> None:
    reply = LLMResponse(text=act("add", a=1, b=1), usage=Usage(input_tokens=40, output_tokens=5))
    result = await agent(ScriptedLLM(policy=lambda m, t: reply), budget=Budget(max_input_tokens=100)).run("t")
    assert result.stop_reason == StopReason.TOKEN_BUDGET
    finished = _run_span(memory_handle, result)
    assert outline(finished) == ["invoke_agent tester !token_budget", *_step_tree(3), "  budget_check"]
    last_check = max(named(finished, "budget_check"), key=lambda s: s.start_time)
    assert last_check.attributes[c.BUDGET_EXHAUSTED] == "token_budget"
    assert last_check.attributes[c.budget_used("input_tokens")] == 120
    assert last_check.attributes[c.budget_limit("input_tokens")] == 100


async def test_cost_budget(memory_handle) -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("paid", q=str(next(counter))))
    result = await agent(llm, budget=Budget(max_cost_usd=1.0)).run("t")
    assert result.stop_reason == StopReason.COST_BUDGET
    finished = _run_span(memory_handle, result)
    assert outline(finished) == ["invoke_agent tester !cost_budget", *_step_tree(3, tool="paid"), "  budget_check"]
    assert [s.attributes[c.COST_USD] for s in named(finished, "execute_tool paid")] == [0.4, 0.4, 0.4]
    last_check = max(named(finished, "budget_check"), key=lambda s: s.start_time)
    assert last_check.attributes[c.BUDGET_EXHAUSTED] == "cost_budget"
    assert last_check.attributes[c.budget_used("cost_usd")] == pytest.approx(1.2)


async def test_timeout_during_the_llm_call(memory_handle) -> None:
    result = await agent(ScriptedLLM([Delayed(final("late"), 30)]), budget=Budget(max_seconds=0.3)).run("t")
    assert result.stop_reason == StopReason.TIMEOUT
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !timeout",
        "  step 1 !timeout",
        "    budget_check",
        "    chat scripted [CLIENT] !cancelled",
    ]
    step = one(finished, "step 1")
    assert "LLM call" in step.status.description and c.STEP_KIND not in step.attributes


async def test_timeout_during_a_tool(memory_handle) -> None:
    result = await agent(ScriptedLLM([act("hang"), final("x")]), budget=Budget(max_seconds=0.5)).run("t")
    assert result.stop_reason == StopReason.TIMEOUT
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !timeout",
        "  step 1 !timeout",
        "    budget_check",
        "    chat scripted [CLIENT]",
        "    execute_tool hang !timeout",
    ]
    assert one(finished, "step 1").attributes[c.STEP_KIND] == "tool"
    assert "hang" in one(finished, "execute_tool hang").status.description


async def test_tool_error_exhausted(memory_handle) -> None:
    counter = iter(range(100))
    llm = ScriptedLLM(policy=lambda m, t: act("fail", x=next(counter)))
    result = await agent(llm, budget=Budget(max_consecutive_errors=2)).run("t")
    assert result.stop_reason == StopReason.TOOL_ERROR_EXHAUSTED
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !tool_error_exhausted",
        "  step 1", "    budget_check", "    chat scripted [CLIENT]", "    execute_tool fail !exception",
        "    truncate_observation",
        "  step 2", "    budget_check", "    chat scripted [CLIENT]", "    execute_tool fail !exception",
        "    truncate_observation",
        "  budget_check",
    ]
    first = named(finished, "execute_tool fail")[0]
    assert first.status.description == "RuntimeError: boom 0"
    assert first.attributes[c.TOOL_DECISION] == "executed"
    assert max(named(finished, "budget_check"), key=lambda s: s.start_time).attributes[
        c.BUDGET_EXHAUSTED] == "tool_error_exhausted"


async def test_unparsable_exhausted(memory_handle) -> None:
    llm = ScriptedLLM(["the answer is blue", "still no format", "nope"])
    result = await agent(llm, budget=Budget(max_consecutive_unparsable=3)).run("t")
    assert result.stop_reason == StopReason.UNPARSABLE_EXHAUSTED
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !unparsable_exhausted",
        "  step 1", "    budget_check", "    chat scripted [CLIENT]",
        "  step 2", "    budget_check", "    chat scripted [CLIENT]",
        "  step 3 !unparsable_exhausted", "    budget_check", "    chat scripted [CLIENT]",
    ]
    for step in named(finished, "step 1") + named(finished, "step 3"):
        assert step.attributes[c.STEP_KIND] == "format_error" and step.attributes[c.STEP_PARSE] == "unparsable"
        assert c.STEP_ACTION not in step.attributes


async def test_llm_unavailable(memory_handle) -> None:
    attempts = [AttemptRecord("m1", "p", 1, None, "rate_limited", 0.1)]
    result = await agent(ScriptedLLM([act("add", a=1, b=2), LLMUnavailable(attempts)])).run("t")
    assert result.stop_reason == StopReason.LLM_UNAVAILABLE
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !llm_unavailable",
        *_step_tree(1),
        "  step 2 !llm_unavailable", "    budget_check", "    chat scripted [CLIENT] !rate_limited",
    ]


async def test_cancelled_by_the_callers_event_before_any_step(memory_handle) -> None:
    cancel = asyncio.Event()
    cancel.set()
    result = await agent(ScriptedLLM([final("x")])).run("t", cancel=cancel)
    assert result.stop_reason == StopReason.CANCELLED
    assert outline(_run_span(memory_handle, result)) == ["invoke_agent tester !cancelled"]


async def test_cancelled_by_task_cancellation_during_a_tool(memory_handle) -> None:
    run = asyncio.create_task(agent(ScriptedLLM([act("hang"), final("x")])).run("t"))
    await asyncio.sleep(0.2)
    run.cancel()
    result = await run
    assert result.stop_reason == StopReason.CANCELLED
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !cancelled",
        "  step 1 !cancelled",
        "    budget_check",
        "    chat scripted [CLIENT]",
        "    execute_tool hang",
    ]
    (tool,) = named(finished, "execute_tool hang")
    # Interrupted, not failed: no tool error.type outside the closed set, an event says why.
    assert tool.status.status_code == StatusCode.UNSET
    assert c.ERROR_TYPE not in tool.attributes
    assert [e.name for e in tool.events] == [c.EVENT_CANCELLED]


class ReturnsWrongType:
    """Breaks the LLM contract (returns a str): a bug, so the run ends with internal_error."""

    model = "broken"

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
        return "not an LLMResponse"


async def test_internal_error(memory_handle) -> None:
    result = await agent(ReturnsWrongType()).run("t")
    assert result.stop_reason == StopReason.INTERNAL_ERROR
    finished = _run_span(memory_handle, result)
    assert outline(finished) == [
        "invoke_agent tester !internal_error",
        "  step 1 !TypeError",
        "    budget_check",
        "    chat broken [CLIENT] !TypeError",
    ]
    step = one(finished, "step 1")
    assert [e.name for e in step.events] == ["exception"]  # the bug's stack trace is on the span
    assert "LLMResponse" in step.events[0].attributes["exception.message"]
