"""Unknown tools and bad arguments are the model's mistakes: the error must tell it how to fix
them (which tools exist, which field is wrong and what the schema wants)."""

from __future__ import annotations

from kernel.dispatch import ERROR_PREFIX, dispatch, error_observation_text, parse_error_observation
from kernel.tools import ToolRegistry, tool
from kernel.types import ToolCall, ToolError
from tracer.conventions import ToolErrorCode

calls: list[dict] = []


@tool
async def get_weather(city: str, days: int = 1) -> str:
    """Weather forecast."""
    calls.append({"city": city, "days": days})
    return "sunny"


@tool
async def search(query: str) -> str:
    """Search."""
    return "result"


REG = ToolRegistry([get_weather, search])


async def test_unknown_tool_names_the_available_ones() -> None:
    obs = await dispatch(REG, ToolCall(id="1", name="get_wether"))
    assert obs.error is not None and obs.error.error == ToolErrorCode.UNKNOWN_TOOL
    assert "get_wether" in obs.error.message
    assert "Available tools: get_weather, search" in obs.error.message
    assert "Did you mean 'get_weather'" in obs.error.message
    assert obs.cost_usd == 0


async def test_wrong_type_names_field_and_wanted_type() -> None:
    calls.clear()
    obs = await dispatch(REG, ToolCall(id="2", name="get_weather", arguments={"city": "Oslo", "days": "two"}))
    assert obs.error is not None and obs.error.error == ToolErrorCode.INVALID_ARGUMENTS
    assert "'days'" in obs.error.message and '"type": "integer"' in obs.error.message
    assert calls == []  # the handler never ran


async def test_missing_required_field_is_named() -> None:
    obs = await dispatch(REG, ToolCall(id="3", name="get_weather", arguments={"days": 2}))
    assert obs.error is not None and obs.error.error == ToolErrorCode.INVALID_ARGUMENTS
    assert "missing required argument 'city'" in obs.error.message
    assert '"type": "string"' in obs.error.message


async def test_unexpected_field_is_named_with_allowed_ones() -> None:
    obs = await dispatch(REG, ToolCall(id="4", name="get_weather", arguments={"city": "Oslo", "dayz": 2}))
    assert obs.error is not None and obs.error.error == ToolErrorCode.INVALID_ARGUMENTS
    assert "'dayz'" in obs.error.message and "allowed: city, days" in obs.error.message


async def test_non_object_arguments_under_raw_are_rejected_with_schema() -> None:
    obs = await dispatch(REG, ToolCall(id="5", name="search", arguments={"_raw": "cats"}))
    assert obs.error is not None and obs.error.error == ToolErrorCode.INVALID_ARGUMENTS
    assert "'cats'" in obs.error.message and '"query"' in obs.error.message


async def test_valid_call_runs_and_reports_duration() -> None:
    calls.clear()
    obs = await dispatch(REG, ToolCall(id="6", name="get_weather", arguments={"city": "Oslo"}))
    assert not obs.is_error and obs.content == "sunny" and obs.error is None
    assert calls == [{"city": "Oslo", "days": 1}]
    assert obs.duration_s >= 0


def test_error_text_round_trips_and_is_prefixed_json() -> None:
    text = error_observation_text(ToolErrorCode.DENIED, 'no "way" ü')
    assert text == ERROR_PREFIX + '{"error": "denied", "message": "no \\"way\\" ü"}'
    assert parse_error_observation(text) == ToolError(error=ToolErrorCode.DENIED, message='no "way" ü')
