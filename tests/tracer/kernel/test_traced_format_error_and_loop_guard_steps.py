"""Steps that are neither tool nor finish: a reply the parser could not use (`format_error`,
parse `unparsable`) and a step the loop guard refused (`loop_guard`), for repeated calls and for a
finish attempted before acknowledging a tool error."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from kernel.llm import ScriptedLLM
from kernel.loop_guard import LoopGuard
from tests.tracer.kernel.kernel_runs import act, agent, final, named, one, outline
from tracer import conventions as c


async def test_format_error_step(memory_handle) -> None:
    result = await agent(ScriptedLLM(["I think it is blue", final("blue")])).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester",
        "  step 1", "    budget_check", "    chat scripted [CLIENT]",
        "  step 2", "    budget_check", "    chat scripted [CLIENT]",
    ]
    step = one(finished, "step 1")
    a = dict(step.attributes)
    assert a == {
        c.STEP_INDEX: 1, c.STEP_KIND: "format_error", c.STEP_PARSE: "unparsable",
        c.STEP_OBSERVATION: result.steps[0].observation_text,
    }
    assert "could not be used" in a[c.STEP_OBSERVATION]
    assert step.status.status_code is StatusCode.UNSET  # the run recovered: not a failure
    assert one(finished, "step 2").attributes[c.STEP_KIND] == "finish"


async def test_loop_guard_step_for_a_repeated_call(memory_handle) -> None:
    llm = ScriptedLLM([act("add", a=1, b=2), act("add", a=1, b=2), final("3")])
    result = await agent(llm, loop_guard=LoopGuard(window=3)).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    # The refused repeat is a guard event on its step, not a (denied) execute_tool span.
    assert outline(finished) == [
        "invoke_agent tester",
        "  step 1", "    budget_check", "    chat scripted [CLIENT]", "    execute_tool add",
        "    truncate_observation",
        "  step 2", "    budget_check", "    chat scripted [CLIENT]",
        "  step 3", "    budget_check", "    chat scripted [CLIENT]",
    ]
    step = one(finished, "step 2")
    assert (step.attributes[c.STEP_KIND], step.attributes[c.STEP_ACTION]) == ("loop_guard", "add")
    assert step.attributes[c.STEP_GUARD_EVENTS] == 1 and c.STEP_GUARD_EVENTS not in one(finished, "step 1").attributes
    assert step.status.status_code is StatusCode.UNSET
    [event] = step.events
    assert event.name == c.EVENT_LOOP_GUARD
    assert dict(event.attributes) == {
        c.GUARD_RULE: "repeated_call", c.GUARD_SEVERITY: "soft", c.GEN_AI_TOOL_NAME: "add",
        c.GEN_AI_TOOL_CALL_ID: result.steps[1].calls[0].id, c.GUARD_PREVIOUS_STEP: 1,
        c.GUARD_MESSAGE: result.steps[1].observation_text,
    }
    assert len(named(finished, "execute_tool add")) == 1
    assert result.steps[1].observations == [] and result.steps[1].guard_events[0].rule == "repeated_call"


async def test_loop_guard_step_for_an_unacknowledged_error(memory_handle) -> None:
    llm = ScriptedLLM([act("fail", x=1), final("fine"), act("add", a=1, b=1), final("2")])
    result = await agent(llm, loop_guard=LoopGuard(window=0, require_error_ack=True)).run("t")
    assert result.ok and result.answer == "2"
    finished = memory_handle.memory_exporter.get_finished_spans()
    step = one(finished, "step 2")
    assert (step.attributes[c.STEP_KIND], step.attributes[c.STEP_ACTION]) == ("loop_guard", "finish")
    assert "cannot finish yet" in step.attributes[c.STEP_OBSERVATION]
    [event] = step.events
    assert event.name == c.EVENT_LOOP_GUARD and event.attributes[c.GUARD_RULE] == "unacknowledged_error"
    assert c.GEN_AI_TOOL_NAME not in event.attributes
    assert outline(finished)[6:9] == ["  step 2", "    budget_check", "    chat scripted [CLIENT]"]
