"""ReplayLLM must serve back exactly what the model said in a stored run, and stop loudly after."""

from __future__ import annotations

import pytest

from kernel.llm import LLM, LLMError, ReplayExhausted, ReplayLLM
from kernel.types import Message, RunResult, StepRecord, ToolCall, Usage
from tracer.conventions import ParseStatus, StepKind, StopReason

CALLS = [ToolCall(id="call_0_ab12", name="search", arguments={"q": "paris weather", "n": 2}),
         ToolCall(id="call_1_cd34", name="clock", arguments={})]


def recorded_run() -> RunResult:
    run = RunResult(
        ok=True,
        stop_reason=StopReason.FINISH,
        answer="It is sunny in Paris.\nAlso: 21°C.",
        trace_id="abc123",
        models=["gpt-x"],
        steps=[
            StepRecord(index=0, kind=StepKind.TOOL, thought="I should look it up.", calls=CALLS,
                       model="gpt-x", usage=Usage(input_tokens=100, output_tokens=20)),
            StepRecord(index=1, kind=StepKind.FORMAT_ERROR, parse=ParseStatus.UNPARSABLE, model="gpt-x",
                       usage=Usage(input_tokens=150, output_tokens=9)),
            StepRecord(index=2, kind=StepKind.FINISH, thought="Done.", answer="It is sunny in Paris.\nAlso: 21°C.",
                       model="gpt-x-mini", usage=Usage(input_tokens=160, output_tokens=12, cached_input_tokens=64)),
        ],
    )
    # stored runs are JSON: replay must work from what was stored, not from live objects
    return RunResult.from_json(run.to_json())


async def test_steps_are_served_in_order_with_recorded_usage_and_model() -> None:
    run = recorded_run()
    llm = ReplayLLM(run)
    assert isinstance(llm, LLM) and llm.model == "gpt-x" and llm.remaining == 3

    r0 = await llm.complete([Message(role="user", content="weather?")])
    assert r0.tool_calls == CALLS and r0.text == "I should look it up."
    assert r0.usage == Usage(input_tokens=100, output_tokens=20) and r0.model == "gpt-x"
    assert r0.finish_reason == "tool_calls" and r0.format_error is None

    r1 = await llm.complete([])
    assert r1.tool_calls == [] and not r1.text and r1.format_error and "step 1" in r1.format_error

    r2 = await llm.complete([])
    assert r2.text == "Thought: Done.\nFinal Answer: It is sunny in Paris.\nAlso: 21°C."
    assert r2.model == "gpt-x-mini" and r2.usage is not None and r2.usage.cached_input_tokens == 64
    assert llm.remaining == 0 and llm.position == 3
    assert llm.requests[0][0].content == "weather?"


async def test_asking_past_the_recording_is_a_clear_non_retryable_error() -> None:
    llm = ReplayLLM(recorded_run())
    for _ in range(3):
        await llm.complete([])
    with pytest.raises(ReplayExhausted) as info:
        await llm.complete([])
    err = info.value
    assert isinstance(err, LLMError) and not err.retryable and err.error_type == "replay_exhausted"
    assert "run abc123" in str(err) and "3 recorded step(s)" in str(err) and "turn 4" in str(err)


async def test_served_responses_are_copies() -> None:
    run = recorded_run()
    llm = ReplayLLM(run)
    r0 = await llm.complete([])
    r0.tool_calls[0].arguments["q"] = "tampered"
    assert run.steps[0].calls[0].arguments["q"] == "paris weather"


async def test_final_answer_falls_back_to_the_run_answer_for_old_records() -> None:
    run = RunResult(ok=True, stop_reason=StopReason.FINISH, answer="42",
                    steps=[StepRecord(index=0, kind=StepKind.FINISH)])
    resp = await ReplayLLM(run).complete([])
    assert resp.text == "Final Answer: 42" and resp.model == "replay"


async def test_refused_finish_under_loop_guard_is_replayed_as_the_same_answer() -> None:
    run = RunResult(ok=False, stop_reason=StopReason.MAX_STEPS, steps=[
        StepRecord(index=0, kind=StepKind.LOOP_GUARD, answer="premature", model="m")])
    resp = await ReplayLLM(run).complete([])
    assert resp.text == "Final Answer: premature"


async def test_parser_reads_replayed_steps_back_identically() -> None:
    parsing = pytest.importorskip("kernel.parsing")
    run = recorded_run()
    llm = ReplayLLM(run)
    for step in run.steps:
        parsed = parsing.parse_response(await llm.complete([]))
        if step.kind == StepKind.FORMAT_ERROR:
            assert parsed.status == ParseStatus.UNPARSABLE
            continue
        assert parsed.status == ParseStatus.OK
        assert parsed.calls == step.calls
        assert parsed.final_answer == step.answer
