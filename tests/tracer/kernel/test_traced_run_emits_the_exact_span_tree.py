"""A successful kernel run emits exactly the span tree and attributes of design.md §2.

Driven through the real Agent (real parser, dispatch, truncation, budgets) with a ScriptedLLM, and
asserted on what the SDK's in-memory exporter received, i.e. what would be exported.
"""

from __future__ import annotations

import json
from unittest.mock import ANY

from opentelemetry.trace import StatusCode

from kernel import telemetry
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.types import LLMResponse, ToolCall, Usage
from tests.tracer.kernel.kernel_runs import act, agent, final, one, outline
from tracer import conventions as c


def _scripted() -> ScriptedLLM:
    return ScriptedLLM([
        LLMResponse(text=act("add", a=2, b=3), model="gpt-4o-mini",
                    usage=Usage(input_tokens=1000, output_tokens=20), finish_reason="stop"),
        LLMResponse(text=final("5"), model="gpt-4o-mini", usage=Usage(input_tokens=1100, output_tokens=10)),
    ])


async def test_successful_run_tree_is_exact(memory_handle) -> None:
    result = await agent(_scripted(), budget=Budget(max_steps=5, max_cost_usd=1.0)).run("what is 2+3?")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester",
        "  step 1",
        "    budget_check",
        "    chat scripted [CLIENT]",
        "    execute_tool add",
        "    truncate_observation",
        "  step 2",
        "    budget_check",
        "    chat scripted [CLIENT]",
    ]
    assert result.trace_id == format(finished[0].context.trace_id, "032x")
    assert all(s.status.status_code is StatusCode.UNSET for s in finished)


async def test_successful_run_attributes_are_exact(memory_handle) -> None:
    llm = _scripted()
    result = await agent(llm, budget=Budget(max_steps=5, max_cost_usd=1.0), temperature=0.2,
                         max_tokens=300).run("what is 2+3?", user_id="u-7")
    finished = memory_handle.memory_exporter.get_finished_spans()

    run = one(finished, "invoke_agent tester")
    assert dict(run.attributes) == {
        c.GEN_AI_OPERATION_NAME: "invoke_agent",
        c.GEN_AI_AGENT_NAME: "tester",
        c.GEN_AI_AGENT_VERSION: "1.0",
        c.GEN_AI_AGENT_ID: "tester@1.0",
        c.GEN_AI_REQUEST_MODEL: "scripted",
        c.RUN_MODE: "live",
        c.ENDUSER_ID: "u-7",
        c.BUDGET_MAX_STEPS: 5,
        c.BUDGET_MAX_COST_USD: 1.0,
        c.BUDGET_MAX_CONSECUTIVE_ERRORS: 3,
        c.BUDGET_MAX_CONSECUTIVE_UNPARSABLE: 3,
        c.RUN_TASK: "what is 2+3?",
        c.RUN_OK: True,
        c.RUN_STOP_REASON: "finish",
        c.RUN_STEPS: 2,
        c.USAGE_INPUT_TOKENS: 2100,
        c.USAGE_OUTPUT_TOKENS: 30,
        c.USAGE_COST_USD: result.cost_usd,
        c.RUN_ANSWER: "5",
    }
    assert c.GEN_AI_CONVERSATION_ID not in run.attributes  # only when the caller gives one
    assert result.cost_usd > 0

    step1, step2 = (one(finished, f"step {i}") for i in (1, 2))
    assert dict(step1.attributes) == {
        c.STEP_INDEX: 1, c.STEP_KIND: "tool", c.STEP_ACTION: "add", c.STEP_PARSE: "ok",
        c.STEP_THOUGHT: "I will use add.", c.STEP_OBSERVATION: "5",
    }
    assert dict(step2.attributes) == {
        c.STEP_INDEX: 2, c.STEP_KIND: "finish", c.STEP_ACTION: "finish", c.STEP_PARSE: "ok",
        c.STEP_THOUGHT: "I know it.",
    }

    checks = [s for s in finished if s.name == "budget_check"]
    first = min(checks, key=lambda s: s.start_time)
    assert dict(first.attributes) == {
        c.BUDGET_EXHAUSTED: "", c.BUDGET_HEADROOM: ANY,
        c.budget_used("steps"): 0, c.budget_limit("steps"): 5,
        c.budget_used("input_tokens"): 0,
        c.budget_used("cost_usd"): 0.0, c.budget_limit("cost_usd"): 1.0,
        c.budget_used("seconds"): ANY,
    }
    second = max(checks, key=lambda s: s.start_time)
    assert second.attributes[c.budget_used("steps")] == 1
    assert second.attributes[c.budget_used("input_tokens")] == 1000
    assert second.attributes[c.BUDGET_HEADROOM] == min(0.8, 1 - second.attributes[c.budget_used("cost_usd")])

    chat1 = min((s for s in finished if s.name == "chat scripted"), key=lambda s: s.start_time)
    a = dict(chat1.attributes)
    inputs, outputs = json.loads(a.pop(c.GEN_AI_INPUT_MESSAGES)), json.loads(a.pop(c.GEN_AI_OUTPUT_MESSAGES))
    assert a == {
        c.GEN_AI_OPERATION_NAME: "chat",
        c.GEN_AI_PROVIDER_NAME: "scripted",
        c.GEN_AI_REQUEST_MODEL: "scripted",
        c.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini",
        c.GEN_AI_REQUEST_TEMPERATURE: 0.2,
        c.GEN_AI_REQUEST_MAX_TOKENS: 300,
        c.LLM_ATTEMPT: 1,
        c.LLM_PURPOSE: "step",
        c.GEN_AI_USAGE_INPUT_TOKENS: 1000,
        c.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
        c.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
        c.USAGE_ESTIMATED: False,
        c.COST_USD: result.steps[0].cost_usd,
    }
    assert [m["role"] for m in inputs] == ["system", "user"]
    assert inputs[1]["parts"] == [{"type": "text", "content": "what is 2+3?"}]
    assert outputs == [{"role": "assistant", "finish_reason": "stop",
                        "parts": [{"type": "text", "content": act("add", a=2, b=3)}]}]

    tool = one(finished, "execute_tool add")
    assert dict(tool.attributes) == {
        c.GEN_AI_OPERATION_NAME: "execute_tool",
        c.GEN_AI_TOOL_NAME: "add",
        c.GEN_AI_TOOL_TYPE: "function",
        c.GEN_AI_TOOL_CALL_ID: result.steps[0].calls[0].id,
        c.TOOL_SIDE_EFFECT: False,
        c.TOOL_RISK: "low",
        c.TOOL_TIMEOUT_S: 30.0,
        c.TOOL_DECISION: "executed",
        c.GEN_AI_TOOL_CALL_ARGUMENTS: '{"a":2,"b":3}',
        c.GEN_AI_TOOL_CALL_RESULT: "5",
    }
    assert dict(one(finished, "truncate_observation").attributes) == {
        c.TRUNCATE_LIMIT_TOKENS: 2000, c.TRUNCATE_INPUT_TOKENS: 1, c.TRUNCATE_OUTPUT_TOKENS: 1,
        c.TRUNCATE_DROPPED_TOKENS: 0, c.TRUNCATE_TRUNCATED: False,
    }


async def test_estimated_usage_and_native_tool_calls_are_recorded(memory_handle) -> None:
    reply = LLMResponse(text=None, tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1, "b": 1})])
    llm = ScriptedLLM([reply, final("2")])  # no usage: ScriptedLLM estimates it, flagged
    result = await agent(llm, mode="function_calling").run("1+1", conversation_id="conv-9")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert one(finished, "invoke_agent tester").attributes[c.GEN_AI_CONVERSATION_ID] == "conv-9"
    chat1 = min((s for s in finished if s.name == "chat scripted"), key=lambda s: s.start_time)
    assert chat1.attributes[c.USAGE_ESTIMATED] is True
    assert chat1.attributes[c.GEN_AI_USAGE_INPUT_TOKENS] == result.steps[0].usage.input_tokens
    assert chat1.attributes[c.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert c.COST_USD not in chat1.attributes  # the model "scripted" has no price: no invented cost
    assert json.loads(chat1.attributes[c.GEN_AI_OUTPUT_MESSAGES])[0]["parts"] == [
        {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1, "b": 1}}]
    assert one(finished, "execute_tool add").attributes[c.GEN_AI_TOOL_CALL_ID] == "c1"


async def test_caller_span_is_the_parent_and_trace_id_is_shared(memory_handle) -> None:
    web = memory_handle.provider.get_tracer("web")
    with web.start_as_current_span("POST /ask") as request:
        result = await agent(ScriptedLLM([final("ok")])).run("t")
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "POST /ask",
        "  invoke_agent tester",
        "    step 1",
        "      budget_check",
        "      chat scripted [CLIENT]",
    ]
    assert result.trace_id == format(request.get_span_context().trace_id, "032x")
    assert one(finished, "invoke_agent tester").parent.span_id == request.get_span_context().span_id


def test_run_sync_inside_a_running_loop_keeps_the_caller_span(memory_handle) -> None:
    import asyncio

    web = memory_handle.provider.get_tracer("web")

    async def handler() -> str | None:
        with web.start_as_current_span("POST /sync"):
            return agent(ScriptedLLM([final("ok")])).run_sync("t").trace_id  # on a helper thread

    trace_id = asyncio.run(handler())
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished)[:2] == ["POST /sync", "  invoke_agent tester"]
    assert trace_id == format(finished[0].context.trace_id, "032x")


async def test_eval_labels_and_shadow_mode_reach_the_run_span(memory_handle) -> None:
    from kernel.policy import Shadow

    with telemetry.run_labels(eval_run_id="ev-1", eval_case_id="case-3"):
        await agent(ScriptedLLM([final("ok")])).run("t")
    await agent(ScriptedLLM([final("ok")]), policy=Shadow()).run("t")
    first, second = sorted((s for s in memory_handle.memory_exporter.get_finished_spans()
                            if s.name == "invoke_agent tester"), key=lambda s: s.start_time)
    assert (first.attributes[c.RUN_MODE], first.attributes[c.EVAL_RUN_ID], first.attributes[c.EVAL_CASE_ID]) == (
        "eval", "ev-1", "case-3")
    assert second.attributes[c.RUN_MODE] == "shadow" and c.EVAL_RUN_ID not in second.attributes
