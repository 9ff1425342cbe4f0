"""One representative traced kernel run carries EVERY attribute design.md §2 lists for the run,
step, chat, tool, truncate and budget_check spans, each where it applies, with values inside the
closed sets, and no attribute name that tracer/conventions.py does not define.

The other traced tests assert exact trees for one situation each; this one guards the contract as
a whole: if the kernel stops sending an attribute (or starts sending one nobody declared), a
dashboard or alert rule built on §2 silently breaks, and this test is what notices.

The run: a primary model that is gone (404, one failed attempt per call, then a fallback with
`steplens.llm.fallback_from`), a paid tool, a tool whose result is truncated, a tool that raises,
all budget limits set, a conversation id, a user id, and eval labels.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from kernel import telemetry
from kernel.budgets import Budget
from kernel.llm import LLMError, ResilientLLM, ScriptedLLM
from kernel.types import LLMResponse, Usage
from tests.tracer.kernel.kernel_runs import act, agent, final
from tracer import conventions as c

# design.md §2, table by table (content attributes marked C there are included: capture is on).
RUN = {
    c.GEN_AI_OPERATION_NAME, c.GEN_AI_AGENT_NAME, c.GEN_AI_AGENT_VERSION, c.GEN_AI_AGENT_ID,
    c.GEN_AI_CONVERSATION_ID, c.GEN_AI_REQUEST_MODEL, c.RUN_OK, c.RUN_STOP_REASON, c.RUN_STEPS, c.RUN_MODE,
    c.BUDGET_MAX_STEPS, c.BUDGET_MAX_INPUT_TOKENS, c.BUDGET_MAX_OUTPUT_TOKENS, c.BUDGET_MAX_COST_USD,
    c.BUDGET_MAX_SECONDS, c.BUDGET_MAX_CONSECUTIVE_ERRORS,
    c.USAGE_INPUT_TOKENS, c.USAGE_OUTPUT_TOKENS, c.USAGE_COST_USD, c.RUN_TASK, c.RUN_ANSWER,
    c.EVAL_RUN_ID, c.EVAL_CASE_ID, c.ENDUSER_ID,
}
STEP = {c.STEP_INDEX, c.STEP_KIND, c.STEP_ACTION, c.STEP_PARSE, c.STEP_THOUGHT, c.STEP_OBSERVATION}
CHAT_ALWAYS = {
    c.GEN_AI_OPERATION_NAME, c.GEN_AI_PROVIDER_NAME, c.GEN_AI_REQUEST_MODEL, c.GEN_AI_REQUEST_TEMPERATURE,
    c.GEN_AI_REQUEST_MAX_TOKENS, c.LLM_ATTEMPT, c.GEN_AI_INPUT_MESSAGES,
}
CHAT_ANSWERED = CHAT_ALWAYS | {
    c.GEN_AI_RESPONSE_MODEL, c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_OUTPUT_TOKENS,
    c.GEN_AI_RESPONSE_FINISH_REASONS, c.USAGE_ESTIMATED, c.COST_USD, c.GEN_AI_OUTPUT_MESSAGES,
}
CHAT_FALLBACK = CHAT_ANSWERED | {c.LLM_FALLBACK_FROM}
CHAT_FAILED = CHAT_ALWAYS | {c.ERROR_TYPE}
TOOL_ALWAYS = {
    c.GEN_AI_OPERATION_NAME, c.GEN_AI_TOOL_NAME, c.GEN_AI_TOOL_CALL_ID, c.GEN_AI_TOOL_TYPE, c.TOOL_DECISION,
    c.TOOL_SIDE_EFFECT, c.TOOL_RISK, c.TOOL_TIMEOUT_S, c.GEN_AI_TOOL_CALL_ARGUMENTS, c.GEN_AI_TOOL_CALL_RESULT,
}
TOOL_PAID = TOOL_ALWAYS | {c.COST_USD}
TOOL_FAILED = TOOL_ALWAYS | {c.ERROR_TYPE}
TRUNCATE = {c.TRUNCATE_LIMIT_TOKENS, c.TRUNCATE_INPUT_TOKENS, c.TRUNCATE_OUTPUT_TOKENS,
            c.TRUNCATE_DROPPED_TOKENS, c.TRUNCATE_TRUNCATED}
BUDGET_CHECK = {c.BUDGET_EXHAUSTED, c.BUDGET_HEADROOM} | {
    f(name) for name in c.BUDGET_NAMES for f in (c.budget_used, c.budget_limit)}


def _known_attribute_names() -> set[str]:
    names = {v for k, v in vars(c).items() if k.isupper() and isinstance(v, str)}
    return names | {f(name) for name in c.BUDGET_NAMES for f in (c.budget_used, c.budget_limit)}


def _down(messages, tools):
    return LLMError("model withdrawn", error_type="model_not_found", model_level=True, status_code=404)


def _reply(text: str) -> LLMResponse:
    return LLMResponse(text=text, model="gpt-4o-mini-2024-07-18", usage=Usage(input_tokens=400, output_tokens=30),
                       finish_reason="stop")


async def _run(handle) -> tuple[object, list[ReadableSpan]]:
    primary = ScriptedLLM(policy=_down, model="claude-x", provider="anthropic")
    backup = ScriptedLLM([_reply(act("paid", q="x")), _reply(act("big", n=300)), _reply(act("fail", x=1)),
                          _reply(final("done"))], model="gpt-4o-mini", provider="openai")
    llm = ResilientLLM([primary, backup], max_attempts_per_model=1)
    budget = Budget(max_steps=10, max_input_tokens=10**6, max_output_tokens=10**5, max_cost_usd=5.0,
                    max_seconds=600, max_consecutive_errors=3, max_consecutive_unparsable=3)
    with telemetry.run_labels(eval_run_id="ev-1", eval_case_id="case-1"):
        result = await agent(llm, budget=budget, temperature=0.0, max_tokens=256, observation_max_tokens=200).run(
            "use the tools", conversation_id="conv-1", user_id="user-1")
    return result, list(handle.memory_exporter.get_finished_spans())


def _missing(spans: Iterable[ReadableSpan], wanted: set[str]) -> dict[str, set[str]]:
    return {s.name: wanted - set(s.attributes) for s in spans if wanted - set(s.attributes)}


async def test_every_contract_attribute_is_present_where_it_applies(memory_handle) -> None:
    result, finished = await _run(memory_handle)
    assert result.ok, result.error
    assert [s.calls[0].name for s in result.steps[:3]] == ["paid", "big", "fail"]

    runs = [s for s in finished if s.name.startswith("invoke_agent ")]
    steps = [s for s in finished if s.name.startswith("step ")]
    chats = [s for s in finished if s.name.startswith("chat ")]
    tools = [s for s in finished if s.name.startswith("execute_tool ")]
    truncs = [s for s in finished if s.name == c.SPAN_TRUNCATE]
    checks = [s for s in finished if s.name == c.SPAN_BUDGET_CHECK]
    assert (len(runs), len(steps), len(chats), len(tools), len(truncs), len(checks)) == (1, 4, 8, 3, 3, 4)

    assert _missing(runs, RUN) == {}
    assert _missing([s for s in steps if s.attributes[c.STEP_KIND] == "tool"], STEP) == {}
    assert _missing(steps, STEP - {c.STEP_OBSERVATION}) == {}  # the finish step has no observation

    failed = [s for s in chats if s.status.status_code is StatusCode.ERROR]
    answered = [s for s in chats if s.status.status_code is not StatusCode.ERROR]
    assert len(failed) == len(answered) == 4
    assert _missing(failed, CHAT_FAILED) == {} and _missing(answered, CHAT_FALLBACK) == {}
    assert {s.attributes[c.ERROR_TYPE] for s in failed} == {"model_not_found"}

    by_tool = {s.attributes[c.GEN_AI_TOOL_NAME]: s for s in tools}
    assert _missing([by_tool["paid"]], TOOL_PAID) == {}
    assert _missing([by_tool["big"]], TOOL_ALWAYS) == {}
    assert _missing([by_tool["fail"]], TOOL_FAILED) == {}
    assert by_tool["fail"].status.status_code is StatusCode.ERROR
    assert c.COST_USD not in by_tool["big"].attributes  # no price, no invented cost

    assert _missing(truncs, TRUNCATE) == {}
    assert any(s.attributes[c.TRUNCATE_TRUNCATED] for s in truncs)
    assert _missing(checks, BUDGET_CHECK) == {}


async def test_values_stay_inside_the_closed_sets_and_names_are_declared(memory_handle) -> None:
    result, finished = await _run(memory_handle)
    closed = {
        c.RUN_STOP_REASON: {v.value for v in c.StopReason},
        c.RUN_MODE: {v.value for v in c.RunMode},
        c.STEP_KIND: {v.value for v in c.StepKind},
        c.STEP_PARSE: {v.value for v in c.ParseStatus},
        c.TOOL_DECISION: {v.value for v in c.ToolDecision},
        c.TOOL_RISK: {v.value for v in c.RiskLevel},
        c.BUDGET_EXHAUSTED: {v.value for v in c.StopReason} | {""},
    }
    known = _known_attribute_names()
    seen: set[str] = set()
    for span in finished:
        for key, value in span.attributes.items():
            assert key in known, f"{span.name}: {key!r} is not declared in tracer/conventions.py"
            if key in closed:
                seen.add(key)
                assert type(value) is str and value in closed[key], f"{span.name}: {key}={value!r}"
        if span.name.startswith("execute_tool ") and c.ERROR_TYPE in span.attributes:
            assert span.attributes[c.ERROR_TYPE] in {v.value for v in c.ToolErrorCode}
    assert seen == set(closed)
    run = next(s for s in finished if s.name.startswith("invoke_agent "))
    assert run.attributes[c.RUN_MODE] == "eval" and run.attributes[c.RUN_STEPS] == len(result.steps)
    assert run.attributes[c.USAGE_COST_USD] == pytest.approx(result.cost_usd)
