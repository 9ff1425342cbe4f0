"""A tool over its rate limit answers `rate_limited` instead of running (or stalling the loop)."""

from __future__ import annotations

from kernel.dispatch import dispatch
from kernel.policy import DenyAll
from kernel.tools import ToolRegistry, tool
from kernel.types import ToolCall
from tracer.conventions import ToolErrorCode

runs: list[int] = []


def _make(rate: float, side_effect: bool = False):
    @tool(rate_limit_per_minute=rate, side_effect=side_effect)
    async def ping() -> str:
        """Ping."""
        runs.append(1)
        return "pong"

    return ping


async def test_third_call_within_the_minute_is_rate_limited() -> None:
    runs.clear()
    reg = ToolRegistry([_make(2)])
    results = [await dispatch(reg, ToolCall(id=str(i), name="ping")) for i in range(3)]
    assert [r.is_error for r in results] == [False, False, True]
    err = results[2].error
    assert err is not None and err.error == ToolErrorCode.RATE_LIMITED and "2 calls per minute" in err.message
    assert len(runs) == 2 and results[2].cost_usd == 0


async def test_fractional_rate_allows_one_call() -> None:
    reg = ToolRegistry([_make(0.5)])
    first = await dispatch(reg, ToolCall(id="a", name="ping"))
    second = await dispatch(reg, ToolCall(id="b", name="ping"))
    assert not first.is_error
    assert second.error is not None and second.error.error == ToolErrorCode.RATE_LIMITED


async def test_limits_are_per_tool_and_denied_calls_do_not_spend_them() -> None:
    limited = _make(1, side_effect=True)
    reg = ToolRegistry([limited])
    denied = await dispatch(reg, ToolCall(id="a", name="ping"), DenyAll())
    assert denied.error is not None and denied.error.error == ToolErrorCode.DENIED
    ok = await dispatch(reg, ToolCall(id="b", name="ping"))
    assert not ok.is_error
    other = ToolRegistry([_make(1)])
    assert not (await dispatch(other, ToolCall(id="c", name="ping"))).is_error
