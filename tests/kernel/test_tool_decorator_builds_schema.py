"""@tool must derive a correct schema and handler; the registry must render it for prompts and
for OpenAI-style function calling, and refuse definitions that would break at run time."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from kernel.tools import Tool, ToolArgumentsError, ToolRegistry, tool
from tracer.conventions import RiskLevel


class SearchArgs(BaseModel):
    query: str = Field(description="what to look for")
    limit: int = 3


@tool
async def search(args: SearchArgs) -> list[str]:
    """Search the docs."""
    return [args.query] * args.limit


@tool(
    "send_mail", side_effect=True, risk=RiskLevel.HIGH, price_usd=0.002, rate_limit_per_minute=5, timeout_s=2
)
async def send(to: Annotated[str, Field(description="recipient")], urgent: bool = False) -> str:
    """Send an e-mail."""
    return f"sent to {to} urgent={urgent}"


def test_bare_decorator_uses_model_schema_and_docstring() -> None:
    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the docs."
    props = search.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "what to look for"}
    assert props["limit"]["default"] == 3
    assert search.parameters["required"] == ["query"]
    assert "title" not in search.parameters and "title" not in props["query"]


def test_signature_hints_become_schema_with_options() -> None:
    assert send.name == "send_mail"
    assert send.side_effect and send.risk == RiskLevel.HIGH
    assert send.price_usd == 0.002 and send.rate_limit_per_minute == 5 and send.timeout_s == 2
    assert send.parameters["properties"]["to"]["description"] == "recipient"
    assert send.parameters["properties"]["urgent"]["type"] == "boolean"
    assert send.parameters["required"] == ["to"]
    # Misspelt arguments must be reported, not silently dropped.
    assert send.parameters["additionalProperties"] is False


async def test_handlers_receive_typed_values() -> None:
    assert await search.handler(query="x", limit=2) == ["x", "x"]
    assert await send.handler(to="a@b.c") == "sent to a@b.c urgent=False"


async def test_handler_rejects_arguments_pydantic_refuses() -> None:
    with pytest.raises(ToolArgumentsError):
        await send.handler(to="a@b.c", urgent="not a bool")


def test_property_named_title_survives_title_stripping() -> None:
    @tool
    async def rename(title: str, mode: Literal["a", "b"] = "a") -> str:
        """Rename."""
        return title

    assert set(rename.parameters["properties"]) == {"title", "mode"}
    assert rename.parameters["properties"]["mode"]["enum"] == ["a", "b"]


def test_sync_function_is_refused() -> None:
    with pytest.raises(TypeError, match="async"):

        @tool
        def not_async(x: int) -> int:
            return x


def test_registry_renders_prompt_text_and_openai_tools() -> None:
    reg = ToolRegistry([search, send])
    assert reg.names() == ["search", "send_mail"] and len(reg) == 2
    assert [t.name for t in reg] == ["search", "send_mail"]
    assert reg.get("search") is search and reg.get("nope") is None
    text = reg.as_prompt_text()
    assert "- search: Search the docs." in text
    schema_line = text.splitlines()[1]
    assert schema_line.startswith("  arguments (JSON Schema): ")
    assert json.loads(schema_line.split(": ", 1)[1]) == search.parameters
    assert "has side effects" in text and "risk: high" in text and "$0.002 per call" in text
    defs = reg.as_openai_tools()
    assert defs[1] == {
        "type": "function",
        "function": {"name": "send_mail", "description": "Send an e-mail.", "parameters": send.parameters},
    }
    assert ToolRegistry().as_prompt_text() == "(no tools available)"


async def _noop() -> None:
    return None


@pytest.mark.parametrize(
    ("tool_", "message"),
    [
        (Tool("has space", "", {"type": "object"}, _noop), "must match"),
        (Tool("finish", "", {"type": "object"}, _noop), "reserved"),
        (Tool("bad_schema", "", {"type": "no-such-type"}, _noop), "invalid JSON Schema"),
        (Tool("zero_timeout", "", {"type": "object"}, _noop, timeout_s=0), "timeout_s"),
    ],
)
def test_registry_refuses_broken_definitions(tool_: Tool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolRegistry([tool_])


def test_registry_refuses_duplicate_names() -> None:
    reg = ToolRegistry([search])
    with pytest.raises(ValueError, match="already registered"):
        reg.register(search)


def test_unresolvable_type_hint_is_a_clear_error() -> None:
    async def uses_local(arg: LocalModel) -> None:  # noqa: F821 - deliberately unresolvable
        return None

    with pytest.raises(TypeError, match="could not resolve the type hints"):
        tool(uses_local)
