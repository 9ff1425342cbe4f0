"""Usage that frameworks aggregate on agent spans (Strands and Agent Framework `gen_ai.usage.*` on
invoke_agent, pydantic-ai `gen_ai.aggregated_usage.*`, smolagents `llm.token_count.*` on its
OpenInference AGENT span, a client cost there) never reaches the token/cost columns, so summing
a trace's spans counts each model call once; and spans that look like calls but are not (ADK's
merged-tools span, LlamaIndex request-building helpers marked LLM) are not tool or LLM calls."""

from __future__ import annotations

import pytest
from opentelemetry.trace import Status, StatusCode

from tracer import conventions as c

CHILD = {
    c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
    c.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
    c.GEN_AI_USAGE_INPUT_TOKENS: 100,
    c.GEN_AI_USAGE_OUTPUT_TOKENS: 10,
}
AGGREGATES = {
    "strands": {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "s",
        c.GEN_AI_USAGE_INPUT_TOKENS: 200, c.GEN_AI_USAGE_OUTPUT_TOKENS: 20, c.GEN_AI_USAGE_COST: 0.5,
    },
    "agent_framework": {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "af",
        c.GEN_AI_USAGE_INPUT_TOKENS: 200, c.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
        c.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 50, c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: 5,
    },
    "pydantic_ai": {
        c.PYDANTIC_AI_AGENT_NAME: "p",
        c.GEN_AI_AGGREGATED_USAGE_INPUT_TOKENS: 200, c.GEN_AI_AGGREGATED_USAGE_OUTPUT_TOKENS: 20,
    },
    "smolagents": {
        c.OI_SPAN_KIND: "AGENT", c.OI_TOKEN_PROMPT: 200, c.OI_TOKEN_COMPLETION: 20, c.OI_TOKEN_TOTAL: 220,
        c.OI_COST_TOTAL: 0.5,
    },
    "traceloop_workflow": {
        c.TRACELOOP_SPAN_KIND: "workflow", c.TRACELOOP_ENTITY_NAME: "w",
        c.LLM_USAGE_PROMPT_TOKENS: 200, c.LLM_USAGE_COMPLETION_TOKENS: 20,
    },
    "langfuse_agent": {
        c.LANGFUSE_OBSERVATION_TYPE: "agent",
        c.LANGFUSE_OBSERVATION_USAGE_DETAILS: '{"input": 200, "output": 20}',
        c.LANGFUSE_OBSERVATION_COST_DETAILS: '{"total": 0.5}',
    },
}  # fmt: skip


@pytest.mark.parametrize("framework", sorted(AGGREGATES))
def test_agent_span_usage_is_not_model_usage(capture, framework):
    tracer = capture.tracer(framework)
    with tracer.start_as_current_span(f"{framework} run", attributes=AGGREGATES[framework]):
        for i in range(2):
            with tracer.start_as_current_span(f"chat {i}", attributes=CHILD):
                pass
    rows = {r["name"]: r for r in capture.rows()}
    run = rows[f"{framework} run"]
    assert run["operation"] in ("agent", "workflow")
    usage = ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens", "cost_usd", "cost_source")
    assert [run[k] for k in usage] == [None] * len(usage)
    assert sum(r["input_tokens"] or 0 for r in rows.values()) == 200  # the two calls, once each
    assert all(rows[f"chat {i}"]["cost_source"] == "price_table" for i in range(2))


def test_adk_merged_tools_span_is_not_a_tool_call(capture):
    tracer = capture.tracer("gcp.vertex.agent")
    merged = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: c.ADK_MERGED_TOOLS}
    with tracer.start_as_current_span(f"execute_tool {c.ADK_MERGED_TOOLS}", attributes=merged):
        pass
    real = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "get_weather"}
    with tracer.start_as_current_span("execute_tool get_weather", attributes=real):
        pass
    rows = {r["name"]: r for r in capture.rows()}
    assert rows[f"execute_tool {c.ADK_MERGED_TOOLS}"]["operation"] == "other"
    assert (rows["execute_tool get_weather"]["operation"], rows["execute_tool get_weather"]["tool_name"]) == (
        "tool", "get_weather",
    )  # fmt: skip


def test_llamaindex_request_helpers_marked_llm_are_not_llm_calls(capture):
    tracer = capture.tracer("openinference.instrumentation.llama_index")
    llm = {c.OI_SPAN_KIND: "LLM"}
    with tracer.start_as_current_span("OpenAI.achat_with_tools", attributes=llm):
        with tracer.start_as_current_span("OpenAI._prepare_chat_with_tools", attributes=llm):
            pass
        used = {**llm, c.OI_LLM_MODEL_NAME: "gpt-4o-mini", c.OI_TOKEN_PROMPT: 50, c.OI_TOKEN_COMPLETION: 5}
        with tracer.start_as_current_span("OpenAI.achat", attributes=used):
            pass
        with tracer.start_as_current_span("OpenAI.get_tool_calls_from_response", attributes=llm):
            pass
    # A failed call has no usage either, but it is a public request method: still an LLM call.
    with tracer.start_as_current_span("OpenAI.chat", attributes=llm) as failed:
        failed.set_status(Status(StatusCode.ERROR, "HTTP 500"))
    with tracer.start_as_current_span("LM.__call__", attributes=llm):  # DSPy: a dunder is the call itself
        pass
    rows = {r["name"]: r for r in capture.rows()}
    assert rows["OpenAI._prepare_chat_with_tools"]["operation"] == "other"
    assert rows["OpenAI.get_tool_calls_from_response"]["operation"] == "other"
    assert (rows["OpenAI.achat"]["operation"], rows["OpenAI.achat"]["input_tokens"]) == ("llm", 50)
    assert rows["OpenAI.chat"]["operation"] == rows["LM.__call__"]["operation"] == "llm"
    assert rows["OpenAI.achat_with_tools"]["operation"] == "llm"  # the wrapper: a trace-level question


def test_failed_tool_span_known_only_by_its_genai_name_is_a_tool_call(capture):
    """openlit's error path leaves a failed tool span with just `execute_tool <tool>` and error.type."""
    tracer = capture.tracer("openlit.otel.tracing")
    with tracer.start_as_current_span("execute_tool get_time", attributes={c.ERROR_TYPE: "AgentToolExecutionError"}) as s:
        s.set_status(Status(StatusCode.ERROR))
    with tracer.start_as_current_span("execute_tool (merged)"):
        pass
    with tracer.start_as_current_span("execute_tool "):
        pass
    rows = {r["name"]: r for r in capture.rows()}
    failed = rows["execute_tool get_time"]
    assert (failed["operation"], failed["tool_name"], failed["error_type"]) == ("tool", "get_time", "AgentToolExecutionError")
    assert rows["execute_tool (merged)"]["operation"] == "other"
    assert rows["execute_tool "]["operation"] == "other"


def test_openai_agents_handoff_is_not_a_tool_call(capture):
    tracer = capture.tracer("openinference.instrumentation.openai_agents")
    with tracer.start_as_current_span("handoff to forecast_writer", attributes={c.OI_SPAN_KIND: "TOOL"}):
        pass
    named = {c.OI_SPAN_KIND: "TOOL", c.OI_TOOL_NAME: "handoff to desk"}  # a tool that happens to be called so
    with tracer.start_as_current_span("handoff to desk", attributes=named):
        pass
    rows = {r["name"]: r for r in capture.rows()}
    assert rows["handoff to forecast_writer"]["operation"] == "other"
    assert (rows["handoff to desk"]["operation"], rows["handoff to desk"]["tool_name"]) == ("tool", "handoff to desk")
