"""Token estimates must not undercount CJK text (4 chars/token would be ~4x too low), and must
never grow when text is split (truncation relies on it to stay in budget)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    estimate_messages_tokens,
    estimate_tokens,
)
from kernel.types import Message, ToolCall


def test_latin_text_is_four_chars_per_token_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("hello world") == 3
    assert estimate_tokens("x" * 4000) == 1000


def test_cjk_characters_count_one_token_each() -> None:
    assert estimate_tokens("你好世界") == 4  # Chinese
    assert estimate_tokens("こんにちは") == 5  # Hiragana
    assert estimate_tokens("カタカナ") == 4  # Katakana
    assert estimate_tokens("안녕하세요") == 5  # Hangul
    assert estimate_tokens("你好，世界。") == 6  # full-width punctuation
    assert estimate_tokens("𠀀") == 1  # CJK extension B (outside the BMP)
    # Mixed: 2 CJK + "hello " (6 chars -> 2 tokens)
    assert estimate_tokens("hello 你好") == 4
    assert estimate_tokens("中" * 1000) == 1000 > estimate_tokens("a" * 1000)


def test_none_and_non_strings_do_not_crash() -> None:
    assert estimate_tokens(None) == 0  # type: ignore[arg-type]
    assert estimate_tokens(12345) == 2  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_of_concatenation_never_exceeds_sum_of_parts(a: str, b: str) -> None:
    assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


def test_messages_include_overhead_and_tool_calls() -> None:
    assert estimate_messages_tokens([]) == 0
    one = [Message(role="user", content="hello world")]
    assert estimate_messages_tokens(one) == REPLY_PRIMING_TOKENS + MESSAGE_OVERHEAD_TOKENS + 3
    with_call = [
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="search", arguments={"q": "天気"})]),
        Message(role="tool", content="晴れ", tool_call_id="c1", name="search"),
    ]
    total = estimate_messages_tokens(with_call)
    expected = (
        REPLY_PRIMING_TOKENS
        + 2 * MESSAGE_OVERHEAD_TOKENS
        + estimate_tokens("search")
        + estimate_tokens('{"q": "天気"}')
        + estimate_tokens("c1")
        + estimate_tokens("晴れ")
        + estimate_tokens("c1")
        + estimate_tokens("search")
    )
    assert total == expected
