"""Function-calling mode: provider tool_calls are used as given (ids kept), bad argument JSON is
a format error with the exact reason, and a reply without tool calls falls back to text."""

from __future__ import annotations

from kernel.parsing import parse_response
from kernel.types import LLMResponse, ToolCall
from tracer.conventions import ParseStatus


def test_several_tool_calls_keep_provider_ids() -> None:
    resp = LLMResponse(
        text="Checking both.",
        tool_calls=[
            ToolCall(id="call_abc", name="search", arguments={"query": "x"}),
            ToolCall(id="call_def", name="weather", arguments={"city": "Oslo"}),
        ],
        finish_reason="tool_calls",
    )
    out = parse_response(resp)
    assert out.status == ParseStatus.OK and out.error is None
    assert [(c.id, c.name, c.arguments) for c in out.calls] == [
        ("call_abc", "search", {"query": "x"}),
        ("call_def", "weather", {"city": "Oslo"}),
    ]
    assert out.thought == "Checking both."


def test_missing_ids_are_generated_deterministically() -> None:
    resp = LLMResponse(tool_calls=[ToolCall(id="", name="search", arguments={"query": "x"})])
    first, second = parse_response(resp), parse_response(resp)
    assert first.calls[0].id.startswith("call_0_") and first.calls[0].id == second.calls[0].id


def test_invalid_argument_json_left_raw_is_a_format_error() -> None:
    resp = LLMResponse(
        tool_calls=[
            ToolCall(id="1", name="search", arguments={"_raw": '{"query": "x"'}),
            ToolCall(id="2", name="ok", arguments={}),
        ]
    )
    out = parse_response(resp)
    assert out.status == ParseStatus.UNPARSABLE and out.calls == []
    assert out.error is not None
    assert "arguments of tool call 'search' are not valid JSON" in out.error
    assert "Expecting ',' delimiter" in out.error


def test_non_object_arguments_are_a_format_error() -> None:
    out = parse_response(
        LLMResponse(tool_calls=[ToolCall(id="1", name="search", arguments={"_raw": "[1, 2]"})])
    )
    assert out.status == ParseStatus.UNPARSABLE
    assert out.error == "arguments of tool call 'search' must be a JSON object, got list"


def test_adapter_format_error_is_passed_through_exactly() -> None:
    msg = "tool_call 0 arguments: Unterminated string starting at: line 1 column 10 (char 9)"
    out = parse_response(LLMResponse(text="x", tool_calls=[ToolCall(id="1", name="a")], format_error=msg))
    assert out.status == ParseStatus.UNPARSABLE and out.error == msg


def test_tool_call_without_name_is_a_format_error() -> None:
    out = parse_response(LLMResponse(tool_calls=[ToolCall(id="1", name=" ", arguments={})]))
    assert out.status == ParseStatus.UNPARSABLE and "has no function name" in (out.error or "")


def test_finish_function_gives_final_answer() -> None:
    out = parse_response(
        LLMResponse(tool_calls=[ToolCall(id="1", name="finish", arguments={"answer": "42"})])
    )
    assert out.status == ParseStatus.OK and out.final_answer == "42" and out.calls == []
    mixed = parse_response(
        LLMResponse(
            tool_calls=[
                ToolCall(id="1", name="search", arguments={"query": "x"}),
                ToolCall(id="2", name="finish", arguments={"answer": "42"}),
            ]
        )
    )
    assert mixed.status == ParseStatus.REPAIRED and [c.id for c in mixed.calls] == ["1"]
    assert mixed.final_answer is None


def test_without_tool_calls_text_is_parsed() -> None:
    out = parse_response(LLMResponse(text="Thought: easy\nFinal Answer: 4"))
    assert out.status == ParseStatus.OK and out.final_answer == "4" and out.thought == "easy"


def test_plain_text_is_unparsable_unless_text_is_final() -> None:
    resp = LLMResponse(text="The answer is 4.", finish_reason="stop")
    assert parse_response(resp).status == ParseStatus.UNPARSABLE
    final = parse_response(resp, text_is_final=True)
    assert final.status == ParseStatus.OK and final.final_answer == "The answer is 4."


def test_cut_off_output_says_so() -> None:
    out = parse_response(LLMResponse(text="I think the answer", finish_reason="length"), text_is_final=True)
    assert out.status == ParseStatus.UNPARSABLE
    assert out.error is not None and "cut off at the token limit" in out.error


def test_cut_off_output_is_not_completed_by_repair() -> None:
    # json_repair would turn this into a call to a tool named "sea".
    out = parse_response(LLMResponse(text='{"action": "sea', finish_reason="length"))
    assert out.status == ParseStatus.UNPARSABLE and out.calls == []
    assert out.error is not None and "cut off at the token limit" in out.error
    complete = parse_response(LLMResponse(text="Final Answer: 4", finish_reason="length"))
    assert complete.status == ParseStatus.OK and complete.final_answer == "4"
