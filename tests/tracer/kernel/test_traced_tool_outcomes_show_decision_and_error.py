"""Tool dispatch outcomes on `execute_tool` spans: a tool's own timeout, a side-effect tool
denied by policy, one shadowed, an unknown tool, and an observation cut by truncation."""

from __future__ import annotations

import json

from opentelemetry.trace import StatusCode

from kernel.llm import ScriptedLLM
from kernel.policy import DenyAll, Shadow
from tests.tracer.kernel.kernel_runs import act, agent, final, one, outline
from tracer import conventions as c

TOOL_STEP = ["  step 1", "    budget_check", "    chat scripted [CLIENT]"]
FINISH_STEP = ["  step 2", "    budget_check", "    chat scripted [CLIENT]"]


async def test_tool_timeout(memory_handle) -> None:
    result = await agent(ScriptedLLM([act("slow"), final("gave up")])).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester", *TOOL_STEP, "    execute_tool slow !timeout", "    truncate_observation",
        *FINISH_STEP,
    ]
    span = one(finished, "execute_tool slow")
    assert span.status.description == "tool 'slow' did not finish within 0.05 s"
    a = dict(span.attributes)
    assert a[c.TOOL_DECISION] == "executed" and a[c.TOOL_TIMEOUT_S] == 0.05 and a[c.ERROR_TYPE] == "timeout"
    assert a[c.GEN_AI_TOOL_CALL_RESULT] == result.steps[0].observations[0].content  # what the model read
    assert a[c.GEN_AI_TOOL_CALL_RESULT].startswith("TOOL_ERROR ")


async def test_denied_side_effect_tool(memory_handle) -> None:
    llm = ScriptedLLM([act("delete_file", path="/tmp/x"), final("could not")])
    result = await agent(llm, policy=DenyAll()).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester", *TOOL_STEP, "    execute_tool delete_file !denied", "    truncate_observation",
        *FINISH_STEP,
    ]
    span = one(finished, "execute_tool delete_file")
    a = dict(span.attributes)
    assert (a[c.TOOL_DECISION], a[c.TOOL_SIDE_EFFECT], a[c.TOOL_RISK], a[c.TOOL_TIMEOUT_S]) == (
        "denied", True, "high", 5.0)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "side-effect tool 'delete_file' is disabled by policy"
    assert json.loads(a[c.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"path": "/tmp/x"}


async def test_shadowed_side_effect_tool(memory_handle) -> None:
    shadow = Shadow()
    llm = ScriptedLLM([act("delete_file", path="/tmp/x"), final("done")])
    result = await agent(llm, policy=shadow).run("t")
    assert result.ok and len(shadow.calls) == 1
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester", *TOOL_STEP, "    execute_tool delete_file", "    truncate_observation",
        *FINISH_STEP,
    ]
    span = one(finished, "execute_tool delete_file")
    assert span.attributes[c.TOOL_DECISION] == "shadowed" and c.ERROR_TYPE not in span.attributes
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[c.GEN_AI_TOOL_CALL_RESULT].startswith("NOT_EXECUTED ")
    assert one(finished, "invoke_agent tester").attributes[c.RUN_MODE] == "shadow"


async def test_unknown_tool(memory_handle) -> None:
    result = await agent(ScriptedLLM([act("ad", a=1), final("x")])).run("t")
    assert result.ok
    span = one(memory_handle.memory_exporter.get_finished_spans(), "execute_tool ad")
    assert span.attributes[c.ERROR_TYPE] == "unknown_tool" and span.status.status_code is StatusCode.ERROR
    assert "Did you mean 'add'?" in span.status.description
    assert c.TOOL_RISK not in span.attributes and c.TOOL_TIMEOUT_S not in span.attributes


async def test_truncated_observation(memory_handle) -> None:
    result = await agent(ScriptedLLM([act("big", n=200), final("long")]), observation_max_tokens=60).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester", *TOOL_STEP, "    execute_tool big", "    truncate_observation", *FINISH_STEP,
    ]
    t = dict(one(finished, "truncate_observation").attributes)
    assert t[c.TRUNCATE_LIMIT_TOKENS] == 60 and t[c.TRUNCATE_TRUNCATED] is True
    assert t[c.TRUNCATE_INPUT_TOKENS] > 2000 and 0 < t[c.TRUNCATE_OUTPUT_TOKENS] <= 60
    assert t[c.TRUNCATE_INPUT_TOKENS] - t[c.TRUNCATE_OUTPUT_TOKENS] <= t[c.TRUNCATE_DROPPED_TOKENS] + 60
    assert t[c.TRUNCATE_DROPPED_TOKENS] > 2000
    # the step shows the observation as the model saw it (cut); the tool span the full result
    step = one(finished, "step 1")
    assert step.attributes[c.STEP_OBSERVATION] == result.steps[0].observation_text
    assert f"[... {t[c.TRUNCATE_DROPPED_TOKENS]} tokens truncated ...]" in step.attributes[c.STEP_OBSERVATION]
    assert one(finished, "execute_tool big").attributes[c.GEN_AI_TOOL_CALL_RESULT].count("\n") == 199


async def test_unknown_tool_with_a_huge_name_gets_a_bounded_span_name(memory_handle) -> None:
    name = "x" * 5000  # the model's free text, not a tool
    result = await agent(ScriptedLLM([f"Action: {name}\nAction Input: {{}}", final("x")])).run("t")
    assert result.ok and result.steps[0].calls[0].name == name
    tools = [s for s in memory_handle.memory_exporter.get_finished_spans() if s.name.startswith("execute_tool ")]
    (span,) = tools
    assert span.name == "execute_tool " + "x" * 64 and span.attributes[c.GEN_AI_TOOL_NAME] == "x" * 64
    assert span.attributes[c.ERROR_TYPE] == "unknown_tool"
