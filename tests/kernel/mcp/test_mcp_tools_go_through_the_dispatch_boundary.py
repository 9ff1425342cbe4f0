"""Tools of a real MCP server (a separate process, over stdio and over streamable HTTP) load into a
ToolRegistry with the server's JSON Schemas and annotations, and every call goes through dispatch:
bad arguments never reach the server, a side-effect tool is gated by the policy, a tool's error
result is an error observation, and the `execute_tool` span names the server and transport."""

from __future__ import annotations

import json

from opentelemetry.trace import StatusCode

from kernel.agent import Agent
from kernel.dispatch import dispatch, parse_error_observation
from kernel.llm import ScriptedLLM
from kernel.mcp import MCPToolOptions
from kernel.policy import DenyAll
from kernel.types import ToolCall
from tests.support.scripted_runs import act, final
from tracer import conventions as c
from tracer.conventions import RiskLevel, ToolDecision, ToolErrorCode


async def test_tools_load_with_schemas_and_flags(make_source) -> None:
    async with make_source(prefix="calc_", overrides={"divide": MCPToolOptions(timeout_s=3)}) as source:
        registry = source.registry()
        assert source.name == "calc" and source.protocol_version
        assert {"calc_add", "calc_write_note", "calc_divide", "calc_hang", "calc_crash"} <= set(registry.names())
        add = registry.get("calc_add")
        assert add.parameters["required"] == ["a", "b"]
        assert add.parameters["properties"]["b"]["description"] == "the second addend"
        assert add.description == "Add two integers." and not add.side_effect and add.risk == RiskLevel.LOW
        note = registry.get("calc_write_note")
        assert note.side_effect and note.risk == RiskLevel.MEDIUM  # read-only false, destructive false
        assert registry.get("calc_divide").timeout_s == 3
        assert add.origin.mcp_server == "calc" and add.origin.mcp_transport == source.transport.value
        # A name with characters providers refuse is renamed; the call still uses the server's name.
        assert "calc_notes_count" in registry and "calc_notes.count" not in registry
        counted = await dispatch(registry, ToolCall(id="n", name="calc_notes_count"))
        assert not counted.is_error and json.loads(counted.content) == {"result": 7}


async def test_calls_are_validated_policed_and_errors_are_observations(make_source) -> None:
    async with make_source(overrides={"whoami": MCPToolOptions(rate_limit_per_minute=1)}) as source:
        registry = source.registry()
        ok = await dispatch(registry, ToolCall(id="1", name="add", arguments={"a": 2, "b": 40}))
        assert not ok.is_error and json.loads(ok.content) == {"result": 42}

        bad = await dispatch(registry, ToolCall(id="2", name="add", arguments={"a": "two", "b": 1}))
        assert bad.is_error and bad.error.error == ToolErrorCode.INVALID_ARGUMENTS

        denied = await dispatch(registry, ToolCall(id="3", name="write_note", arguments={"text": "x"}), DenyAll())
        assert denied.decision == ToolDecision.DENIED and denied.error.error == ToolErrorCode.DENIED

        failed = await dispatch(registry, ToolCall(id="4", name="divide", arguments={"a": 1, "b": 0}))
        err = parse_error_observation(failed.content)
        assert err is not None and err.error == ToolErrorCode.EXCEPTION and "division by zero" in err.message

        first = await dispatch(registry, ToolCall(id="5", name="whoami"))
        second = await dispatch(registry, ToolCall(id="6", name="whoami"))
        assert not first.is_error and second.error.error == ToolErrorCode.RATE_LIMITED


async def test_agent_run_over_mcp_and_the_tool_span_names_the_server(make_source, memory_handle) -> None:
    async with make_source() as source:
        llm = ScriptedLLM([act("add", a=1, b=2), act("divide", a=1, b=0), final("3")])
        result = await Agent("mcp-agent", "1", llm, source.registry()).run("add 1 and 2")
    assert result.ok and result.answer == "3"
    assert json.loads(result.steps[0].observations[0].content) == {"result": 3}
    spans = {s.name: s for s in memory_handle.memory_exporter.get_finished_spans()}
    add, divide = spans["execute_tool add"], spans["execute_tool divide"]
    a = dict(add.attributes)
    assert a[c.TOOL_MCP_SERVER] == "calc" and a[c.TOOL_MCP_TRANSPORT] == source.transport.value
    assert a[c.MCP_METHOD_NAME] == "tools/call" and a[c.MCP_PROTOCOL_VERSION] == source.protocol_version
    assert a[c.NETWORK_TRANSPORT] == c.MCP_NETWORK_TRANSPORT[source.transport]
    if source.transport == c.McpTransport.STREAMABLE_HTTP:
        assert a[c.NETWORK_PROTOCOL_NAME] == "http" and a[c.SERVER_ADDRESS] == "127.0.0.1" and a[c.SERVER_PORT] > 0
    else:
        assert c.SERVER_ADDRESS not in a
    assert add.status.status_code is StatusCode.UNSET
    assert divide.status.status_code is StatusCode.ERROR and divide.attributes[c.ERROR_TYPE] == "exception"


async def test_the_server_gets_the_tool_span_as_its_trace_parent(make_source, memory_handle) -> None:
    async with make_source() as source:
        llm = ScriptedLLM([act("traceparent"), final("ok")])
        result = await Agent("mcp-agent", "1", llm, source.registry()).run("t")
    assert result.ok
    [span] = [s for s in memory_handle.memory_exporter.get_finished_spans() if s.name == "execute_tool traceparent"]
    ctx = span.get_span_context()
    version, trace_id, parent_id, _ = result.steps[0].observations[0].content.split("-")
    assert (trace_id, parent_id) == (format(ctx.trace_id, "032x"), format(ctx.span_id, "016x"))
