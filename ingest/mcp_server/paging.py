"""Cursors and the output budget: every tool's answer fits `max_chars` and says how to get the rest.

Why one budget in characters: what limits a coding agent is its context window, and a character
budget is what a tool can keep exactly (a token is 3-4 characters of this kind of text). Long
strings inside an item (a tool result, an exception) are cut first, marked with how much was cut,
so one huge value never crowds out the rest of a page.

A cursor is opaque to the caller: the API's own cursor of the page being read plus how many items
of that page were already returned (a page that did not fit the budget resumes mid-page).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

DEFAULT_MAX_CHARS = 20_000
MIN_MAX_CHARS = 1_000
MAX_MAX_CHARS = 200_000
DEFAULT_FIELD_CHARS = 500  # longest string kept inside an item
ENVELOPE_RESERVE = 400  # room kept for the answer's own keys (next_cursor, counts)


@dataclass(frozen=True)
class Cursor:
    api: str | None = None  # the API's cursor of the page being read (None: the first page)
    offset: int = 0  # items of that page already returned


def encode_cursor(cursor: Cursor) -> str:
    raw = json.dumps({"c": cursor.api, "o": cursor.offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str | None) -> Cursor:
    if not text:
        return Cursor()
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        api, offset = data["c"], data["o"]
        if not (api is None or isinstance(api, str)) or not isinstance(offset, int) or offset < 0:
            raise TypeError("cursor fields")
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise ToolError("cursor is malformed: pass the next_cursor of a previous answer unchanged") from None
    return Cursor(api, offset)


def check_budget(max_chars: int) -> int:
    if not MIN_MAX_CHARS <= max_chars <= MAX_MAX_CHARS:
        raise ToolError(f"max_chars must be between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}, got {max_chars}")
    return max_chars


def clip(value: Any, limit: int = DEFAULT_FIELD_CHARS) -> Any:
    """`value` with every string longer than `limit` cut, ending in `…[+N chars]`."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}…[+{len(value) - limit} chars]"
    if isinstance(value, list):
        return [clip(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: clip(v, limit) for k, v in value.items()}
    return value


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def fit(items: Sequence[Any], budget: int) -> tuple[list[Any], int]:
    """The leading items whose JSON fits `budget` characters, and how many of `items` they are.

    At least one item is returned when there is one: an item that alone is over the budget is
    replaced by its JSON text cut to the budget, marked, so paging always moves forward.
    """
    room = budget - ENVELOPE_RESERVE
    out: list[Any] = []
    used = 0
    for item in items:
        cost = size(item) + 1
        if used + cost > room:
            break
        out.append(item)
        used += cost
    if not out and items:
        text = json.dumps(items[0], ensure_ascii=False, default=str)
        keep = max(room - 100, 100)
        out.append({"item_cut_to_fit": text[:keep] + f"…[+{len(text) - keep} chars]"})
        return out, 1
    return out, len(out)


def page_answer(
    key: str, items: Sequence[Any], cursor: Cursor, api_next: str | None, budget: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The answer for one API page read at `cursor`: the items that fit, and the cursor after them."""
    rest = list(items[cursor.offset:])
    shown, n = fit(rest, budget - size(extra or {}))
    if n < len(rest):
        nxt: str | None = encode_cursor(Cursor(cursor.api, cursor.offset + n))
    else:
        nxt = encode_cursor(Cursor(api_next, 0)) if api_next else None
    answer: dict[str, Any] = {key: shown, "next_cursor": nxt}
    if n < len(rest):
        answer["cut_by_budget"] = f"{len(rest) - n} more item(s) of this page did not fit max_chars; pass next_cursor"
    answer.update(extra or {})
    return answer
