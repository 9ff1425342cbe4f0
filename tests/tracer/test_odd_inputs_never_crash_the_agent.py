"""Whatever the kernel (or a user's code) hands the helpers, tracing never raises into the run."""

from __future__ import annotations

import json

from tracer import conventions as c
from tracer import spans


class Weird:
    def __str__(self) -> str:
        return "weird-object"


def test_odd_values_are_recorded_or_dropped_never_raised(memory_handle):
    circular: dict = {"a": 1}
    circular["self"] = circular
    with spans.run_span(None, budget={"max_steps": None, "unknown": 3}, task=Weird()) as run:  # type: ignore[arg-type]
        with spans.chat_span(model=123, input_messages=[object(), 5, {"role": "user", "content": Weird()}],  # type: ignore[arg-type]
                             temperature="hot", max_tokens=None) as chat:  # type: ignore[arg-type]
            chat.record_response(finish_reasons="stop", input_tokens="many", output_tokens=2.0,  # type: ignore[arg-type]
                                 output_tool_calls=[Weird()])
        with spans.tool_span("t", arguments=circular) as tool:
            tool.finish(result=b"bytes", cost_usd="free")  # type: ignore[arg-type]
        with spans.tool_span("t2", arguments="{not json") as tool:
            tool.finish(result=None)
        run.finish(ok=True, stop_reason=c.StopReason.FINISH, steps="2", answer=12)  # type: ignore[arg-type]
    got = {s.name: s for s in memory_handle.memory_exporter.get_finished_spans()}
    assert set(got) == {"invoke_agent None", "chat 123", "execute_tool t", "execute_tool t2"}
    chat_attrs = got["chat 123"].attributes
    assert chat_attrs[c.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",) and chat_attrs[c.GEN_AI_REQUEST_MODEL] == "123"
    assert c.GEN_AI_USAGE_INPUT_TOKENS not in chat_attrs  # a string is not a token count: dropped
    assert chat_attrs[c.GEN_AI_USAGE_OUTPUT_TOKENS] == 2
    messages = json.loads(chat_attrs[c.GEN_AI_INPUT_MESSAGES])
    assert messages[2] == {"role": "user", "parts": [{"type": "text", "content": "weird-object"}]}
    assert got["execute_tool t"].attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS].startswith("[steplens: content not")
    assert got["execute_tool t2"].attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS] == "{not json"
    assert got["invoke_agent None"].attributes[c.RUN_TASK] == "weird-object"
    assert got["invoke_agent None"].attributes[c.RUN_ANSWER] == "12"
