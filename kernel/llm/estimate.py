"""Rough token counts for when a provider reports none.

A tokenizer per model would be more exact but is a heavy, model-specific dependency; budgets only
need an order of magnitude, and every estimate is flagged (`Usage.estimated`) so dashboards can
tell counted from reported tokens.
"""

from __future__ import annotations

import json
import math

from kernel.types import LLMResponse, Message, ToolCall, Usage

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str | None) -> int:
    """~4 characters per token, rounded up; empty text costs nothing."""
    if not text:
        return 0
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _calls_text(calls: list[ToolCall]) -> str:
    return "".join(c.name + json.dumps(c.arguments, default=str) for c in calls)


def estimate_usage(
    messages: list[Message], tools: list[dict] | None, response: LLMResponse
) -> Usage:
    """Input = every message (and tool schema) sent; output = text + tool calls returned."""
    sent = "".join((m.content or "") + _calls_text(m.tool_calls) for m in messages)
    if tools:
        sent += json.dumps(tools, default=str)
    received = (response.text or "") + _calls_text(response.tool_calls)
    return Usage(
        input_tokens=estimate_tokens(sent),
        output_tokens=estimate_tokens(received),
        estimated=True,
    )
