"""A tool that hangs must not hang the agent: it gets a `timeout` error observation."""

from __future__ import annotations

import asyncio
import time

from kernel.dispatch import dispatch
from kernel.tools import ToolRegistry, tool
from kernel.types import ToolCall
from tracer.conventions import ToolDecision, ToolErrorCode


@tool(timeout_s=0.05, price_usd=0.01)
async def sleepy(seconds: float) -> str:
    """Sleeps."""
    await asyncio.sleep(seconds)
    return "woke up"


async def test_tool_sleeping_past_its_timeout_gets_timeout_error() -> None:
    start = time.monotonic()
    obs = await dispatch(ToolRegistry([sleepy]), ToolCall(id="t1", name="sleepy", arguments={"seconds": 10}))
    assert time.monotonic() - start < 5  # the 10 s sleep was abandoned, not awaited
    assert obs.is_error and obs.error is not None
    assert obs.error.error == ToolErrorCode.TIMEOUT
    assert "0.05 s" in obs.error.message and "sleepy" in obs.error.message
    assert obs.decision == ToolDecision.EXECUTED and obs.cost_usd == 0.01
    assert obs.duration_s >= 0.05


async def test_tool_within_its_timeout_returns_result() -> None:
    obs = await dispatch(ToolRegistry([sleepy]), ToolCall(id="t2", name="sleepy", arguments={"seconds": 0}))
    assert not obs.is_error and obs.content == "woke up" and obs.cost_usd == 0.01
