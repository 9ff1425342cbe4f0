"""A real MCP server that hangs, crashes mid-call or is killed between calls turns into tool errors
the model reads (`timeout`, `exception` naming the server), never a stuck or crashed run; and a
server that cannot start fails loudly at start-up, within the connect timeout."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.dispatch import parse_error_observation
from kernel.llm import ScriptedLLM
from kernel.mcp import MCPConnectionError, MCPToolOptions, MCPToolSource
from tests.support.scripted_runs import act, final
from tracer.conventions import StopReason, ToolErrorCode


def _error(step) -> ToolErrorCode | None:  # noqa: ANN001 - a StepRecord
    err = parse_error_observation(step.observations[0].content)
    return err.error if err is not None else None


async def test_a_hanging_tool_times_out_and_the_run_goes_on(make_source) -> None:
    async with make_source(overrides={"hang": MCPToolOptions(timeout_s=0.5)}) as source:
        llm = ScriptedLLM([act("hang"), act("add", a=2, b=2), final("4")])
        t0 = time.monotonic()
        result = await Agent("a", "1", llm, source.registry(), budget=Budget(max_seconds=30)).run("t")
        elapsed = time.monotonic() - t0
    assert result.ok and result.answer == "4", result.error
    assert _error(result.steps[0]) == ToolErrorCode.TIMEOUT and "0.5 s" in result.steps[0].observation_text
    assert json.loads(result.steps[1].observations[0].content) == {"result": 4}, "the server still answers"
    assert elapsed < 10


async def test_a_server_that_dies_mid_call_gives_errors_then_the_run_ends(make_source) -> None:
    async with make_source() as source:
        llm = ScriptedLLM([act("crash"), act("add", a=1, b=1), act("add", a=1, b=2), act("add", a=1, b=3)])
        agent = Agent("a", "1", llm, source.registry(), budget=Budget(max_seconds=30, max_consecutive_errors=3))
        t0 = time.monotonic()
        result = await agent.run("t")
        elapsed = time.monotonic() - t0
    assert result.stop_reason == StopReason.TOOL_ERROR_EXHAUSTED and result.answer is None
    assert [_error(s) for s in result.steps] == [ToolErrorCode.EXCEPTION] * 3
    assert "calc" in result.steps[1].observation_text  # the error names the server
    assert elapsed < 15


async def test_a_server_killed_between_calls_answers_later_calls_with_errors(make_source) -> None:
    async with make_source() as source:
        pid = json.loads(await source.call("whoami", {}))["pid"]
        os.kill(pid, signal.SIGKILL)
        llm = ScriptedLLM([act("add", a=1, b=1), final("gave up")])
        t0 = time.monotonic()
        result = await Agent("a", "1", llm, source.registry(), budget=Budget(max_seconds=30)).run("t")
        assert time.monotonic() - t0 < 15
    assert result.ok and result.answer == "gave up"
    assert _error(result.steps[0]) == ToolErrorCode.EXCEPTION


async def test_a_server_that_cannot_start_fails_at_start_up() -> None:
    t0 = time.monotonic()
    with pytest.raises(MCPConnectionError):
        async with MCPToolSource.stdio(sys.executable, ["-c", "import time; time.sleep(60)"], connect_timeout_s=1):
            pass
    assert time.monotonic() - t0 < 10
    with pytest.raises(MCPConnectionError):
        async with MCPToolSource.http("http://127.0.0.1:9/mcp", connect_timeout_s=3):
            pass
