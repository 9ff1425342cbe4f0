"""Dispatch is the safety boundary: whatever the model sends and whatever the tool does, the
loop gets an Observation back (only cancellation propagates)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.dispatch import ERROR_PREFIX, dispatch, parse_error_observation
from kernel.policy import Shadow
from kernel.tools import Tool, ToolRegistry, tool
from kernel.types import ToolCall
from tracer.conventions import ToolErrorCode


@tool
async def echo(text: str, times: int = 1) -> str:
    """Echo text."""
    return text * times


@tool(price_usd=0.5)
async def boom(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom: {reason}")


@tool(side_effect=True)
async def write(path: str) -> str:
    """Write a file."""
    return "written"


REGISTRY = ToolRegistry([echo, boom, write])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["echo", "boom", "write", "missing", ""]) | st.text(max_size=30),
    arguments=st.dictionaries(st.text(max_size=10), json_values, max_size=5),
)
def test_dispatch_never_raises_on_arbitrary_calls(name: str, arguments: dict[str, Any]) -> None:
    async def run() -> None:
        call = ToolCall(id="c1", name=name, arguments=arguments)
        obs = await dispatch(REGISTRY, call, Shadow())
        assert obs.tool_call_id == "c1" and obs.tool_name == name
        assert isinstance(obs.content, str)
        if obs.is_error:
            assert obs.content.startswith(ERROR_PREFIX)
            assert parse_error_observation(obs.content) == obs.error

    asyncio.run(run())


async def test_exception_becomes_error_with_type_and_cost() -> None:
    obs = await dispatch(REGISTRY, ToolCall(id="1", name="boom", arguments={"reason": "disk"}))
    assert obs.is_error and obs.error is not None
    assert obs.error.error == ToolErrorCode.EXCEPTION
    assert "RuntimeError" in obs.error.message and "kaboom: disk" in obs.error.message
    # The tool ran, so its price is charged even though it failed.
    assert obs.cost_usd == 0.5
    assert parse_error_observation(obs.content) == obs.error


async def test_handler_that_is_not_async_still_yields_observation() -> None:
    def sync_handler(**kwargs: Any) -> dict:
        return {"got": kwargs}

    def crashing(**kwargs: Any) -> None:
        raise KeyError("x")

    reg = ToolRegistry(
        [
            Tool("sync", "", {"type": "object"}, sync_handler),  # type: ignore[arg-type]
            Tool("crash", "", {"type": "object"}, crashing),  # type: ignore[arg-type]
        ]
    )
    ok = await dispatch(reg, ToolCall(id="1", name="sync", arguments={"a": 1}))
    assert not ok.is_error and ok.content == '{"got": {"a": 1}}'
    bad = await dispatch(reg, ToolCall(id="2", name="crash"))
    assert bad.error is not None and bad.error.error == ToolErrorCode.EXCEPTION and "KeyError" in bad.content


@dataclasses.dataclass
class Point:
    x: int
    when: dt.date


async def test_non_string_results_are_rendered_as_json() -> None:
    async def handler(kind: str) -> Any:
        return {
            "dict": {"a": [1, 2], "ü": None},
            "dataclass": Point(1, dt.date(2024, 1, 2)),
            "none": None,
            "number": 3.5,
            "text": "plain",
            "object": object(),
        }[kind]

    reg = ToolRegistry([Tool("r", "", {"type": "object"}, handler)])

    async def content(kind: str) -> str:
        obs = await dispatch(reg, ToolCall(id="1", name="r", arguments={"kind": kind}))
        assert not obs.is_error
        return obs.content

    assert await content("dict") == '{"a": [1, 2], "ü": null}'
    assert await content("dataclass") == '{"x": 1, "when": "2024-01-02"}'
    assert await content("none") == "null"
    assert await content("number") == "3.5"
    assert await content("text") == "plain"
    assert (await content("object")).startswith('"<object object at')


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()

    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    reg = ToolRegistry([Tool("slow", "", {"type": "object"}, slow, timeout_s=60)])
    task = asyncio.create_task(dispatch(reg, ToolCall(id="1", name="slow")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_parse_error_observation_rejects_other_text() -> None:
    assert parse_error_observation("all good") is None
    assert parse_error_observation(ERROR_PREFIX + "{not json") is None
    assert parse_error_observation(ERROR_PREFIX + '{"error": "nope", "message": "x"}') is None
    assert parse_error_observation(None) is None  # type: ignore[arg-type]
