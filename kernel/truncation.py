"""Cutting a long observation down to a token budget.

The head and the tail are kept (output usually starts with what was asked for and ends with a
summary, an error or a stack trace; 60% of the kept budget to the head, 40% to the tail,
`kernel.defaults.TRUNCATION_HEAD_SHARE`) and the middle is replaced by a marker that says how much
was cut, so the model knows it did not see everything and can ask for less.

Token counts are `kernel.tokens.estimate_tokens`. Because that estimate never grows when text
is split, the result (head + marker + tail) never exceeds `limit_tokens`, except when the limit
is smaller than the marker itself: then the marker alone is returned (an empty observation
would hide that anything was there) and `output_tokens` honestly exceeds the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel.defaults import TRUNCATION_HEAD_SHARE
from kernel.tokens import CHARS_PER_TOKEN, estimate_tokens

# Share of the kept budget given to the head; the rest goes to the tail (kernel.defaults says why).
HEAD_SHARE = TRUNCATION_HEAD_SHARE
# When a cut point can move back to a line break without losing more than this share of the
# piece, it does, so lines are not split in the middle.
_LINE_SNAP_SHARE = 0.2


@dataclass
class Truncation:
    text: str
    input_tokens: int
    output_tokens: int
    dropped_tokens: int
    truncated: bool


def marker(dropped_tokens: int) -> str:
    return f"\n[... {dropped_tokens} tokens truncated ...]\n"


def _prefix_len(text: str, budget: int) -> int:
    """Longest prefix length whose token estimate is at most `budget`. The estimate grows with
    the prefix, so binary search; each probe is a C-speed regex scan, fine for megabytes."""
    lo, hi = 0, min(len(text), max(budget, 0) * CHARS_PER_TOKEN)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _snap_head(text: str, end: int) -> int:
    """Move the head's end back to just after a line break when that loses little."""
    nl = text.rfind("\n", 0, end)
    return nl + 1 if nl >= 0 and end - (nl + 1) <= end * _LINE_SNAP_SHARE else end


def _snap_tail(text: str, start: int) -> int:
    """Move the tail's start forward to just after a line break when that loses little."""
    nl = text.find("\n", start)
    keep = len(text) - start
    return nl + 1 if nl >= 0 and (nl + 1 - start) <= keep * _LINE_SNAP_SHARE else start


def truncate_observation(text: str, limit_tokens: int) -> Truncation:
    """Fit `text` into `limit_tokens` estimated tokens, keeping head and tail. Never raises."""
    text = "" if text is None else text if isinstance(text, str) else str(text)
    try:
        limit = max(int(limit_tokens), 0)
    except (TypeError, ValueError, OverflowError):
        limit = 0
    n_in = estimate_tokens(text)
    if n_in <= limit:
        return Truncation(text, n_in, n_in, 0, False)

    # Reserve room for the marker at its widest (it can never report more than n_in tokens).
    room = limit - estimate_tokens(marker(n_in))
    if room <= 0:
        out = marker(n_in).strip("\n")
        return Truncation(out, n_in, estimate_tokens(out), n_in, True)

    head_budget = int(room * HEAD_SHARE)
    tail_budget = room - head_budget
    head_end = _snap_head(text, _prefix_len(text, head_budget))
    tail_start = len(text) - _prefix_len(text[head_end:][::-1], tail_budget)
    tail_start = _snap_tail(text, max(tail_start, head_end))
    head, middle, tail = text[:head_end], text[head_end:tail_start], text[tail_start:]
    dropped = estimate_tokens(middle)
    cut = marker(dropped)
    if head.endswith("\n") or not head:
        cut = cut[1:]
    if tail.startswith("\n") or not tail:
        cut = cut[:-1]
    out = head + cut + tail
    return Truncation(out, n_in, estimate_tokens(out), dropped, True)
