"""Whatever the model emits, parsing returns a ParsedOutput; UNPARSABLE always carries an error."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.parsing import ParsedOutput, parse_response, parse_text
from kernel.types import LLMResponse, ToolCall
from tracer.conventions import ParseStatus

# Text built from the pieces parsers trip on, plus arbitrary unicode.
fragments = st.sampled_from(
    [
        "Thought:",
        "Action:",
        "Action Input:",
        "Final Answer:",
        "Observation:",
        "**Action:**",
        "{",
        "}",
        "[",
        "]",
        '"',
        "'",
        "“",
        "”",
        "\\",
        ",",
        ":",
        "```",
        "```json\n",
        "\n",
        '{"action": "x", "args": {',
        '"action"',
        "finish",
        "answer",
        "_raw",
        "你好",
        " ",
    ]
)
texty = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(fragments, st.text(max_size=10)), max_size=40).map("".join),
)


def _check(out: ParsedOutput) -> None:
    assert isinstance(out, ParsedOutput)
    if out.status == ParseStatus.UNPARSABLE:
        assert out.error and not out.calls and out.final_answer is None
    else:
        assert out.error is None
        assert bool(out.calls) != (out.final_answer is not None)
        for call in out.calls:
            assert call.name and isinstance(call.arguments, dict)


@settings(max_examples=200, deadline=None)
@given(texty)
def test_parse_text_never_raises(text: str) -> None:
    _check(parse_text(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    text=st.none() | texty,
    calls=st.lists(
        st.builds(
            ToolCall,
            id=st.text(max_size=5),
            name=st.text(max_size=10) | st.sampled_from(["finish", "search"]),
            arguments=st.dictionaries(st.text(max_size=6) | st.just("_raw"), json_values, max_size=3),
        ),
        max_size=3,
    ),
    format_error=st.none() | st.text(min_size=1, max_size=20),
    finish_reason=st.none() | st.sampled_from(["stop", "length", "tool_calls"]),
)
def test_parse_response_never_raises(
    text: str | None, calls: list[ToolCall], format_error: str | None, finish_reason: Any
) -> None:
    response = LLMResponse(
        text=text, tool_calls=calls, format_error=format_error, finish_reason=finish_reason
    )
    _check(parse_response(response))
    _check(parse_response(response, text_is_final=True))


def test_non_string_input_does_not_raise() -> None:
    assert parse_text(None).status == ParseStatus.UNPARSABLE
    assert parse_text(12345).status == ParseStatus.UNPARSABLE  # type: ignore[arg-type]
    assert parse_text("{" * 5000).status == ParseStatus.UNPARSABLE
