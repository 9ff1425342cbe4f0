"""Long observations are cut to the budget with head and tail kept and an explicit marker, so the
model knows it did not see everything."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.defaults import TRUNCATION_HEAD_SHARE
from kernel.tokens import estimate_tokens
from kernel.truncation import truncate_observation

MARKER_RE = re.compile(r"\[\.\.\. (\d+) tokens truncated \.\.\.\]")


def test_short_text_is_untouched() -> None:
    t = truncate_observation("small result", 100)
    assert (t.text, t.truncated, t.dropped_tokens) == ("small result", False, 0)
    assert t.input_tokens == t.output_tokens == estimate_tokens("small result")


def test_long_text_keeps_head_and_tail_and_states_the_cut() -> None:
    lines = [f"line {i:04d} " + "data " * 6 for i in range(500)]
    text = "\n".join(lines)
    t = truncate_observation(text, 200)
    assert t.truncated and t.input_tokens == estimate_tokens(text)
    assert t.output_tokens == estimate_tokens(t.text) <= 200
    assert t.text.startswith("line 0000 ") and t.text.endswith(lines[-1])
    found = MARKER_RE.findall(t.text)
    assert found == [str(t.dropped_tokens)]
    assert t.dropped_tokens > 0.8 * t.input_tokens
    head, tail = MARKER_RE.split(t.text)[0], MARKER_RE.split(t.text)[-1]
    # Cuts fall on line boundaries, and what is kept is verbatim from the original.
    assert head.endswith("\n") and tail.startswith("\n")
    assert text.startswith(head) and text.endswith(tail.lstrip("\n"))
    # The head gets 60% of what is kept, the tail 40% (kernel.defaults.TRUNCATION_HEAD_SHARE).
    kept_head, kept_tail = estimate_tokens(head), estimate_tokens(tail)
    assert kept_head > kept_tail
    assert abs(kept_head / (kept_head + kept_tail) - TRUNCATION_HEAD_SHARE) < 0.06, (kept_head, kept_tail)


def test_cjk_text_is_budgeted_per_character() -> None:
    text = "开始" + "中" * 2000 + "结束"
    t = truncate_observation(text, 60)
    assert t.truncated and t.output_tokens <= 60
    assert t.text.startswith("开始") and t.text.endswith("结束")
    assert t.input_tokens == 2004


def test_limit_smaller_than_marker_returns_marker_alone() -> None:
    t = truncate_observation("x" * 400, 3)
    assert t.truncated and t.text == "[... 100 tokens truncated ...]"
    assert t.dropped_tokens == t.input_tokens == 100
    assert t.output_tokens == estimate_tokens(t.text)  # honest even though over the limit


def test_bad_limits_and_inputs_do_not_crash() -> None:
    assert truncate_observation("abc" * 100, -5).truncated
    assert truncate_observation("abc" * 100, "ten").truncated  # type: ignore[arg-type]
    assert truncate_observation(None, 10).text == ""  # type: ignore[arg-type]
    assert truncate_observation("", 0).truncated is False


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000), st.integers(min_value=12, max_value=400))
def test_output_never_exceeds_limit_and_counts_add_up(text: str, limit: int) -> None:
    t = truncate_observation(text, limit)
    assert t.output_tokens == estimate_tokens(t.text) <= limit
    if t.truncated:
        assert MARKER_RE.search(t.text)
        assert t.dropped_tokens > 0 and t.input_tokens > limit
    else:
        assert t.text == text and t.dropped_tokens == 0
