"""Spans written by the real OTel SDK with each convention's attribute names (ours, OTel GenAI
current and deprecated, OpenInference, OpenLLMetry/Traceloop) land in the same promoted columns,
and aggregate usage on parent spans is never counted twice."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracer import conventions as c


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


def test_steplens_run_with_steps_tools_and_budget(capture):
    tracer = capture.tracer("steplens.kernel")
    run_attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_AGENT_NAME: "researcher",
        c.GEN_AI_AGENT_VERSION: "1.4.0",
        c.GEN_AI_CONVERSATION_ID: "conv-9",
        c.ENDUSER_ID: "user-7",
        c.RUN_OK: False,
        c.RUN_STOP_REASON: c.StopReason.TOOL_ERROR_EXHAUSTED.value,
        c.RUN_STEPS: 3,
        c.RUN_MODE: c.RunMode.SHADOW.value,
        # aggregates of the children: must NOT reach the token/cost columns
        c.USAGE_INPUT_TOKENS: 999,
        c.USAGE_OUTPUT_TOKENS: 99,
        c.USAGE_COST_USD: 1.5,
    }
    with tracer.start_as_current_span("invoke_agent researcher", attributes=run_attrs):
        with tracer.start_as_current_span("step 0", attributes={c.STEP_INDEX: 0, c.STEP_KIND: "tool"}):
            with tracer.start_as_current_span(c.SPAN_BUDGET_CHECK):
                pass
            chat = {
                c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
                c.GEN_AI_PROVIDER_NAME: "anthropic",
                c.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-20250514",
                c.GEN_AI_USAGE_INPUT_TOKENS: 1000,
                c.GEN_AI_USAGE_OUTPUT_TOKENS: 200,
                c.COST_USD: 0.0042,  # the kernel's own price wins over the table
            }
            with tracer.start_as_current_span("chat claude-sonnet-4", kind=SpanKind.CLIENT, attributes=chat):
                pass
            tool = {
                c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
                c.GEN_AI_TOOL_NAME: "search",
                c.COST_USD: 0.01,
                c.ERROR_TYPE: c.ToolErrorCode.TIMEOUT.value,
            }
            with tracer.start_as_current_span("execute_tool search", attributes=tool) as span:
                span.set_status(Status(StatusCode.ERROR, "tool timed out"))
            with tracer.start_as_current_span(c.SPAN_TRUNCATE, attributes={c.TRUNCATE_TRUNCATED: True}):
                pass
        with tracer.start_as_current_span("plan researcher", attributes={c.GEN_AI_OPERATION_NAME: c.OP_PLAN}):
            pass
        with tracer.start_as_current_span("replan researcher", attributes={c.REPLAN_VERDICT: "admitted"}):
            pass
    rows = by_name(capture.rows())
    run = rows["invoke_agent researcher"]
    assert run["operation"] == "agent"
    assert (run["agent_name"], run["agent_version"]) == ("researcher", "1.4.0")
    assert (run["run_ok"], run["stop_reason"], run["run_steps"], run["run_mode"]) == (
        False,
        "tool_error_exhausted",
        3,
        "shadow",
    )
    assert (run["conversation_id"], run["user_id"]) == ("conv-9", "user-7")
    assert (run["input_tokens"], run["output_tokens"], run["cost_usd"]) == (None, None, None)
    assert json.loads(run["attributes"])[c.USAGE_INPUT_TOKENS] == 999  # still there, just not promoted
    assert (rows["step 0"]["operation"], rows["step 0"]["step_index"]) == ("step", 0)
    assert rows[c.SPAN_BUDGET_CHECK]["operation"] == "budget"
    assert rows[c.SPAN_TRUNCATE]["operation"] == "truncate"
    assert rows["plan researcher"]["operation"] == "plan"
    assert rows["replan researcher"]["operation"] == "replan"
    llm = rows["chat claude-sonnet-4"]
    assert (llm["operation"], llm["provider"], llm["kind"]) == ("llm", "anthropic", "CLIENT")
    assert (llm["cost_usd"], llm["cost_source"]) == (0.0042, "span")
    tool = rows["execute_tool search"]
    assert (tool["tool_name"], tool["error_type"], tool["status"]) == ("search", "timeout", "ERROR")
    assert (tool["cost_usd"], tool["cost_source"], tool["input_tokens"]) == (0.01, "span", None)
    assert all(r["trace_id"] == run["trace_id"] for r in rows.values())
    assert rows["step 0"]["parent_span_id"] == run["span_id"]


def test_deprecated_genai_names_and_messages_in_events(capture):
    tracer = capture.tracer("old-genai")
    attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_SYSTEM: "openai",
        c.GEN_AI_REQUEST_MODEL: "gpt-4o-2024-08-06",
        c.GEN_AI_USAGE_PROMPT_TOKENS: 2000,
        c.GEN_AI_USAGE_COMPLETION_TOKENS: 100,
    }
    with tracer.start_as_current_span("chat gpt-4o", attributes=attrs) as span:
        span.add_event("gen_ai.user.message", {"content": "hello"})
        span.add_event("gen_ai.choice", {"index": 0, "message": json.dumps({"content": "hi"})})
    (row,) = capture.rows()
    assert (row["provider"], row["model"], row["input_tokens"], row["output_tokens"]) == (
        "openai",
        "gpt-4o-2024-08-06",
        2000,
        100,
    )
    assert row["cost_usd"] == pytest.approx((2000 * 2.5 + 100 * 10) / 1e6)
    events = json.loads(row["events"])
    assert [e["name"] for e in events] == ["gen_ai.user.message", "gen_ai.choice"]
    assert events[0]["attributes"] == {"content": "hello"}
    assert events[1]["time"].endswith("+00:00")


def test_openinference_kinds_and_names(capture):
    tracer = capture.tracer("openinference.instrumentation.langchain")
    with tracer.start_as_current_span(
        "agent",
        attributes={
            c.OI_SPAN_KIND: "AGENT",
            c.OI_AGENT_NAME: "support-bot",
            c.OI_SESSION_ID: "s-1",
            c.OI_USER_ID: "u-1",
        },
    ):
        with tracer.start_as_current_span(
            "chain", attributes={c.OI_SPAN_KIND: "CHAIN", c.OI_TOKEN_PROMPT: 5}
        ):
            pass
        with tracer.start_as_current_span("retrieve", attributes={c.OI_SPAN_KIND: "RETRIEVER"}):
            pass
        with tracer.start_as_current_span("rerank", attributes={c.OI_SPAN_KIND: "RERANKER"}):
            pass
        with tracer.start_as_current_span(
            "embed",
            attributes={
                c.OI_SPAN_KIND: "EMBEDDING",
                c.OI_LLM_MODEL_NAME: "text-embedding-3-small",
                c.OI_TOKEN_PROMPT: 1_000_000,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "lookup", attributes={c.OI_SPAN_KIND: "TOOL", c.OI_TOOL_NAME: "kb_lookup"}
        ):
            pass
        with tracer.start_as_current_span("guard", attributes={c.OI_SPAN_KIND: "GUARDRAIL"}):
            pass
        llm = {
            c.OI_SPAN_KIND: "LLM",
            c.OI_LLM_PROVIDER: "mistralai",
            c.OI_LLM_MODEL_NAME: "mistral-large-2411",
            c.OI_LLM_INVOCATION_PARAMETERS: json.dumps({"model": "mistral-large-latest", "temperature": 0}),
            c.OI_TOKEN_PROMPT: 100,
            c.OI_TOKEN_COMPLETION: 10,
            c.OI_TOKEN_CACHE_READ: 40,
        }
        with tracer.start_as_current_span("ChatMistral", attributes=llm):
            pass
    rows = by_name(capture.rows())
    agent = rows["agent"]
    assert (agent["operation"], agent["agent_name"], agent["conversation_id"], agent["user_id"]) == (
        "agent",
        "support-bot",
        "s-1",
        "u-1",
    )
    assert (rows["chain"]["operation"], rows["chain"]["input_tokens"]) == ("other", None)
    assert rows["retrieve"]["operation"] == rows["rerank"]["operation"] == "retrieval"
    assert rows["guard"]["operation"] == "other"
    embed = rows["embed"]
    assert (embed["operation"], embed["input_tokens"], embed["model"]) == (
        "embedding",
        1_000_000,
        "text-embedding-3-small",
    )
    assert embed["cost_usd"] == pytest.approx(0.02)
    assert (rows["lookup"]["operation"], rows["lookup"]["tool_name"]) == ("tool", "kb_lookup")
    llm_row = rows["ChatMistral"]
    assert (llm_row["model"], llm_row["response_model"], llm_row["provider"]) == (
        "mistral-large-latest",
        "mistral-large-2411",
        "mistralai",
    )
    assert (llm_row["input_tokens"], llm_row["output_tokens"], llm_row["cache_read_tokens"]) == (100, 10, 40)
    assert llm_row["cost_usd"] == pytest.approx((100 * 2.0 + 10 * 6.0) / 1e6)


def test_openllmetry_traceloop_kinds_and_legacy_usage(capture):
    tracer = capture.tracer("traceloop.sdk")
    workflow = {
        c.TRACELOOP_SPAN_KIND: "workflow",
        c.TRACELOOP_ENTITY_NAME: "trip_planner",
        c.TRACELOOP_ENTITY_VERSION: "7",
    }
    with tracer.start_as_current_span("trip_planner.workflow", attributes=workflow):
        with tracer.start_as_current_span(
            "book.task", attributes={c.TRACELOOP_SPAN_KIND: "task", c.TRACELOOP_ENTITY_NAME: "book"}
        ):
            pass
        with tracer.start_as_current_span(
            "flights.tool",
            attributes={c.TRACELOOP_SPAN_KIND: "tool", c.TRACELOOP_ENTITY_NAME: "find_flights"},
        ):
            pass
        legacy = {
            c.LLM_REQUEST_TYPE: "chat",
            c.GEN_AI_SYSTEM: "Anthropic",
            c.GEN_AI_REQUEST_MODEL: "claude-3-5-haiku-20241022",
            c.LLM_USAGE_PROMPT_TOKENS: 300,
            c.LLM_USAGE_COMPLETION_TOKENS: 30,
            c.TRACELOOP_USAGE_CACHE_READ_INPUT_TOKENS: 100,
            c.TRACELOOP_ASSOCIATION_USER_ID: "u-42",
        }
        with tracer.start_as_current_span("anthropic.chat", attributes=legacy):
            pass
        with tracer.start_as_current_span("openai.embeddings", attributes={c.LLM_REQUEST_TYPE: "embedding"}):
            pass
    rows = by_name(capture.rows())
    wf = rows["trip_planner.workflow"]
    assert (wf["operation"], wf["agent_name"], wf["agent_version"]) == ("workflow", "trip_planner", "7")
    assert (rows["book.task"]["operation"], rows["book.task"]["agent_name"]) == ("other", None)
    assert (rows["flights.tool"]["operation"], rows["flights.tool"]["tool_name"]) == ("tool", "find_flights")
    chat = rows["anthropic.chat"]
    assert (chat["operation"], chat["provider"], chat["user_id"]) == ("llm", "Anthropic", "u-42")
    assert (chat["input_tokens"], chat["output_tokens"], chat["cache_read_tokens"]) == (300, 30, 100)
    assert chat["cost_usd"] == pytest.approx((200 * 0.80 + 100 * 0.08 + 30 * 4.0) / 1e6)
    assert rows["openai.embeddings"]["operation"] == "embedding"


def test_unknown_spans_are_other_and_unknown_models_are_unpriced(capture):
    tracer = capture.tracer("http")
    with tracer.start_as_current_span("GET /health", kind=SpanKind.SERVER):
        pass
    llm = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_REQUEST_MODEL: "my-local-llama",
        c.GEN_AI_USAGE_INPUT_TOKENS: 5,
    }
    with tracer.start_as_current_span("chat my-local-llama", attributes=llm):
        pass
    with tracer.start_as_current_span("step over", attributes={"x": 1}):  # not ours: no index
        pass
    rows = by_name(capture.rows())
    assert (rows["GET /health"]["operation"], rows["GET /health"]["kind"]) == ("other", "SERVER")
    local = rows["chat my-local-llama"]
    assert (local["input_tokens"], local["cost_usd"], local["cost_source"]) == (5, None, None)
    assert rows["step over"]["operation"] == "other"
