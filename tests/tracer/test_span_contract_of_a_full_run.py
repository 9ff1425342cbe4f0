"""The helpers emit exactly the span tree, kinds and attributes of design.md §2.

A run is driven through the helpers the way the kernel will: two steps with budget checks, a
failed LLM attempt followed by a fallback model, a tool success, a tool timeout, a denied tool, a
truncation, then the run's outcome. Everything is asserted on what the SDK's in-memory exporter
received, i.e. what would be exported.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from tracer import conventions as c
from tracer import spans


class ProviderError(Exception):
    def __init__(self, error_type: str) -> None:
        super().__init__(f"provider said {error_type}")
        self.error_type = error_type


def _drive_run() -> str:
    with spans.run_span(
        "weather_agent",
        agent_version="1.2.0",
        agent_id="agent-7",
        conversation_id="conv-1",
        model="gpt-4.1-mini",
        mode=c.RunMode.EVAL,
        budget={"max_steps": 5, "max_cost_usd": 0.5, "max_seconds": None},
        task="What is the weather in Paris?",
        eval_run_id="ev-1",
        eval_case_id="case-3",
        user_id="u-42",
    ) as run:
        with spans.step_span(1) as step:
            spans.budget_check(
                used={"steps": 0, "input_tokens": 0, "cost_usd": 0.0, "seconds": 0.01},
                limits={"steps": 5, "input_tokens": None, "cost_usd": 0.5, "seconds": None},
                exhausted=None,
                headroom=1.0,
            )
            with pytest.raises(ProviderError), spans.chat_span(
                model="gpt-4.1-mini", provider="openai", attempt=1, temperature=0.2, max_tokens=256,
                input_messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            ):
                raise ProviderError("server_error")
            with spans.chat_span(
                model="gpt-4o-mini", provider="openai", attempt=1, fallback_from="gpt-4.1-mini",
                temperature=0.2, max_tokens=256,
                input_messages=[{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "What is the weather in Paris?"}],
            ) as chat:
                chat.record_response(
                    response_model="gpt-4o-mini-2024-07-18", input_tokens=31, output_tokens=12,
                    finish_reasons=["tool_calls"], estimated=False, cost_usd=0.0001,
                    output_text=None,
                    output_tool_calls=[{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
                )
            with spans.tool_span("get_weather", call_id="call_1", side_effect=False, risk=c.RiskLevel.LOW,
                                 timeout_s=5, arguments={"city": "Paris"}) as tool:
                tool.finish(decision=c.ToolDecision.EXECUTED, result='{"temp_c": 21}', cost_usd=0.002)
            with spans.tool_span("slow_lookup", call_id="call_2", timeout_s=0.5, arguments='{"q": "x"}') as tool:
                tool.finish(decision=c.ToolDecision.EXECUTED, error_type=c.ToolErrorCode.TIMEOUT,
                            error_message="slow_lookup timed out after 0.5s")
            with spans.truncate_span(limit_tokens=100, input_tokens=340) as trunc:
                trunc.finish(output_tokens=100)
            step.record(kind=c.StepKind.TOOL, action="get_weather", parse=c.ParseStatus.REPAIRED,
                        thought="I should look it up", observation='{"temp_c": 21}')
        with spans.step_span(2) as step:
            spans.budget_check(
                used={"steps": 1, "input_tokens": 31, "cost_usd": 0.0021, "seconds": 0.2},
                limits={"steps": 5, "input_tokens": None, "cost_usd": 0.5, "seconds": None},
                exhausted=None,
                headroom=0.8,
            )
            with spans.tool_span("delete_file", call_id="call_3", side_effect=True, risk=c.RiskLevel.HIGH,
                                 arguments={"path": "/tmp/x"}) as tool:
                tool.finish(decision=c.ToolDecision.DENIED, result="denied by policy",
                            error_type=c.ToolErrorCode.DENIED, error_message="policy denied delete_file")
            step.record(kind=c.StepKind.FINISH, action=c.ACTION_FINISH, parse=c.ParseStatus.OK)
        run.finish(ok=True, stop_reason=c.StopReason.FINISH, steps=2, input_tokens=31, output_tokens=12,
                   cost_usd=0.0021, answer="21 °C and sunny")
        trace_id = run.trace_id
    assert trace_id is not None
    return trace_id


def test_full_run_tree_names_kinds_and_parentage(memory_handle):
    trace_id = _drive_run()
    finished = memory_handle.memory_exporter.get_finished_spans()
    names = [s.name for s in finished]
    assert sorted(names) == sorted([
        "invoke_agent weather_agent", "step 1", "step 2", "budget_check", "budget_check",
        "chat gpt-4.1-mini", "chat gpt-4o-mini", "execute_tool get_weather", "execute_tool slow_lookup",
        "execute_tool delete_file", "truncate_observation",
    ])
    assert {format(s.context.trace_id, "032x") for s in finished} == {trace_id}
    by_id = {s.context.span_id: s for s in finished}

    def parent_name(span):
        return by_id[span.parent.span_id].name if span.parent else None

    run = next(s for s in finished if s.name.startswith("invoke_agent"))
    assert run.parent is None and run.kind is SpanKind.INTERNAL
    for s in finished:
        expected_kind = SpanKind.CLIENT if s.name.startswith("chat ") else SpanKind.INTERNAL
        assert s.kind is expected_kind, s.name
        if s.name.startswith("step "):
            assert parent_name(s) == run.name
        elif s is not run:
            assert parent_name(s) in {"step 1", "step 2"}, s.name
    step2_children = {by_id[s.context.span_id].name for s in finished if parent_name(s) == "step 2"}
    assert step2_children == {"budget_check", "execute_tool delete_file"}
    # resource
    assert run.resource.attributes[c.SERVICE_NAME] == "tracer-tests"
    assert run.resource.attributes[c.SERVICE_VERSION] == "9.9"
    assert run.resource.attributes[c.DEPLOYMENT_ENVIRONMENT_NAME] == "test"


def test_full_run_attributes_match_the_contract(memory_handle):
    _drive_run()
    spans_by_name = {}
    for s in memory_handle.memory_exporter.get_finished_spans():
        spans_by_name.setdefault(s.name, []).append(s)

    run = spans_by_name["invoke_agent weather_agent"][0]
    a = dict(run.attributes)
    assert a[c.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert a[c.GEN_AI_AGENT_NAME] == "weather_agent" and a[c.GEN_AI_AGENT_VERSION] == "1.2.0"
    assert a[c.GEN_AI_AGENT_ID] == "agent-7" and a[c.GEN_AI_CONVERSATION_ID] == "conv-1"
    assert a[c.GEN_AI_REQUEST_MODEL] == "gpt-4.1-mini"
    assert a[c.RUN_MODE] == "eval" and type(a[c.RUN_MODE]) is str
    assert a[c.BUDGET_MAX_STEPS] == 5 and a[c.BUDGET_MAX_COST_USD] == 0.5
    assert c.BUDGET_MAX_SECONDS not in a  # unlimited is left out
    assert a[c.RUN_OK] is True and a[c.RUN_STOP_REASON] == "finish" and a[c.RUN_STEPS] == 2
    assert a[c.USAGE_INPUT_TOKENS] == 31 and a[c.USAGE_OUTPUT_TOKENS] == 12 and a[c.USAGE_COST_USD] == 0.0021
    assert a[c.RUN_TASK] == "What is the weather in Paris?" and a[c.RUN_ANSWER] == "21 °C and sunny"
    assert a[c.EVAL_RUN_ID] == "ev-1" and a[c.EVAL_CASE_ID] == "case-3" and a[c.ENDUSER_ID] == "u-42"
    assert run.status.status_code is StatusCode.UNSET

    failed, fallback = spans_by_name["chat gpt-4.1-mini"][0], spans_by_name["chat gpt-4o-mini"][0]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description.startswith("ProviderError: provider said server_error")
    assert failed.attributes[c.ERROR_TYPE] == "server_error"
    assert failed.attributes[c.LLM_ATTEMPT] == 1 and c.GEN_AI_USAGE_INPUT_TOKENS not in failed.attributes
    assert [e.name for e in failed.events] == ["exception"]
    f = dict(fallback.attributes)
    assert f[c.GEN_AI_OPERATION_NAME] == "chat" and f[c.GEN_AI_PROVIDER_NAME] == "openai"
    assert f[c.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini" and f[c.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
    assert f[c.LLM_FALLBACK_FROM] == "gpt-4.1-mini" and f[c.LLM_ATTEMPT] == 1
    assert f[c.GEN_AI_USAGE_INPUT_TOKENS] == 31 and f[c.GEN_AI_USAGE_OUTPUT_TOKENS] == 12
    assert f[c.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert f[c.GEN_AI_REQUEST_TEMPERATURE] == 0.2 and f[c.GEN_AI_REQUEST_MAX_TOKENS] == 256
    assert f[c.USAGE_ESTIMATED] is False and f[c.COST_USD] == 0.0001
    assert fallback.status.status_code is StatusCode.UNSET and c.ERROR_TYPE not in f
    assert json.loads(f[c.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]},
    ]
    assert json.loads(f[c.GEN_AI_OUTPUT_MESSAGES]) == [{
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        "finish_reason": "tool_calls",
    }]

    ok_tool = dict(spans_by_name["execute_tool get_weather"][0].attributes)
    assert ok_tool == {
        c.GEN_AI_OPERATION_NAME: "execute_tool",
        c.GEN_AI_TOOL_NAME: "get_weather",
        c.GEN_AI_TOOL_TYPE: "function",
        c.GEN_AI_TOOL_CALL_ID: "call_1",
        c.TOOL_SIDE_EFFECT: False,
        c.TOOL_RISK: "low",
        c.TOOL_TIMEOUT_S: 5.0,
        c.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Paris"}',
        c.TOOL_DECISION: "executed",
        c.COST_USD: 0.002,
        c.GEN_AI_TOOL_CALL_RESULT: '{"temp_c": 21}',
    }
    assert spans_by_name["execute_tool get_weather"][0].status.status_code is StatusCode.UNSET

    timeout = spans_by_name["execute_tool slow_lookup"][0]
    assert timeout.status.status_code is StatusCode.ERROR
    assert timeout.status.description == "slow_lookup timed out after 0.5s"
    assert timeout.attributes[c.ERROR_TYPE] == "timeout" and timeout.attributes[c.TOOL_DECISION] == "executed"
    assert json.loads(timeout.attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"q": "x"}

    denied = spans_by_name["execute_tool delete_file"][0]
    assert denied.attributes[c.TOOL_DECISION] == "denied" and denied.attributes[c.ERROR_TYPE] == "denied"
    assert denied.attributes[c.TOOL_SIDE_EFFECT] is True and denied.attributes[c.TOOL_RISK] == "high"
    assert denied.status.status_code is StatusCode.ERROR

    trunc = dict(spans_by_name["truncate_observation"][0].attributes)
    assert trunc == {
        c.TRUNCATE_LIMIT_TOKENS: 100, c.TRUNCATE_INPUT_TOKENS: 340, c.TRUNCATE_OUTPUT_TOKENS: 100,
        c.TRUNCATE_DROPPED_TOKENS: 240, c.TRUNCATE_TRUNCATED: True,
    }

    first_check, second_check = sorted(spans_by_name["budget_check"], key=lambda s: s.start_time)
    assert dict(first_check.attributes) == {
        c.BUDGET_EXHAUSTED: "", c.BUDGET_HEADROOM: 1.0,
        c.budget_used("steps"): 0, c.budget_limit("steps"): 5,
        c.budget_used("input_tokens"): 0,
        c.budget_used("cost_usd"): 0.0, c.budget_limit("cost_usd"): 0.5,
        c.budget_used("seconds"): 0.01,
    }
    assert second_check.attributes[c.BUDGET_HEADROOM] == 0.8

    step1, step2 = spans_by_name["step 1"][0], spans_by_name["step 2"][0]
    assert dict(step1.attributes) == {
        c.STEP_INDEX: 1, c.STEP_KIND: "tool", c.STEP_ACTION: "get_weather", c.STEP_PARSE: "repaired",
        c.STEP_THOUGHT: "I should look it up", c.STEP_OBSERVATION: '{"temp_c": 21}',
    }
    assert step2.attributes[c.STEP_KIND] == "finish" and step2.attributes[c.STEP_ACTION] == "finish"


def test_failed_run_is_error_with_stop_reason_as_error_type(memory_handle):
    with spans.run_span("a") as run:
        run.finish(ok=False, stop_reason=c.StopReason.MAX_STEPS, steps=5, error="hit max_steps=5")
    (span,) = memory_handle.memory_exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.status.description == "hit max_steps=5"
    assert span.attributes[c.ERROR_TYPE] == "max_steps" and span.attributes[c.RUN_OK] is False


def test_exception_escaping_a_tool_marks_it_failed_and_propagates(memory_handle):
    with pytest.raises(KeyError), spans.run_span("a"), spans.tool_span("boom"):
        raise KeyError("missing")
    tool, run = memory_handle.memory_exporter.get_finished_spans()
    assert tool.attributes[c.ERROR_TYPE] == "KeyError" and tool.status.status_code is StatusCode.ERROR
    assert run.attributes[c.ERROR_TYPE] == "KeyError"  # it escaped the run too
    assert tool.events[0].attributes["exception.type"] == "KeyError"


def test_caller_current_span_becomes_the_run_parent(memory_handle):
    outer_tracer = memory_handle.provider.get_tracer("web")
    with outer_tracer.start_as_current_span("GET /ask") as request, spans.run_span("a") as run:
        assert run.trace_id == format(request.get_span_context().trace_id, "032x")
        assert spans.current_trace_id() == run.trace_id
    run_span, request_span = memory_handle.memory_exporter.get_finished_spans()
    assert run_span.parent.span_id == request_span.context.span_id


def test_plan_and_replan_spans(memory_handle):
    with spans.run_span("planner"):
        with spans.plan_span("planner") as plan:
            with spans.chat_span(model="m"):
                pass
            plan.record(version=1, steps=4)
        with spans.step_span(1, plan_version=1, plan_step_id="s1") as step:
            step.record(kind=c.StepKind.TOOL, action="search")
        with spans.replan_span("planner", granularity=c.ReplanGranularity.TAIL, from_version=1,
                               cause="timeout", failed_step="s1") as replan:
            replan.record(verdict=c.ReplanVerdict.ADMITTED, to_version=2, steps=3)
    got = {s.name: s for s in memory_handle.memory_exporter.get_finished_spans()}
    assert got["plan planner"].attributes[c.GEN_AI_OPERATION_NAME] == "plan"
    assert got["plan planner"].attributes[c.PLAN_VERSION] == 1 and got["plan planner"].attributes[c.PLAN_STEPS] == 4
    assert got["chat m"].parent.span_id == got["plan planner"].context.span_id
    assert got["step 1"].attributes[c.PLAN_STEP_ID] == "s1" and got["step 1"].attributes[c.PLAN_VERSION] == 1
    r = got["replan planner"].attributes
    assert (r[c.REPLAN_GRANULARITY], r[c.REPLAN_CAUSE], r[c.REPLAN_FAILED_STEP]) == ("tail", "timeout", "s1")
    assert (r[c.REPLAN_VERDICT], r[c.REPLAN_FROM_VERSION], r[c.REPLAN_TO_VERSION]) == ("admitted", 1, 2)
