"""The Langfuse SDK's JSON-valued span attributes → promoted column values.

Why a module of its own: Langfuse (v3+, OpenTelemetry based) puts a generation's usage, cost and
first-token time into JSON text attributes (`langfuse.observation.usage_details`, `cost_details`,
`completion_start_time`) instead of one attribute per number. Their keys follow Langfuse's own
usage model, where the categories are exclusive (`input` excludes `input_cache_read`, and the
total is the sum of all keys), or else the provider's raw usage object (OpenAI's `prompt_tokens`,
`prompt_tokens_details.cached_tokens`, ...). Both are mapped to our columns' OTel semantics,
where cache reads/writes are part of the input tokens and reasoning part of the output tokens.
Only generation/embedding spans are parsed, so the JSON cost stays off the hot path of other spans.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ingest.normalize.values import as_count, as_float

# Langfuse usage keys (exclusive categories) → which of our counts they belong to.
_INPUT_KEYS = ("input", "prompt_tokens", "input_tokens", "promptTokens")
_OUTPUT_KEYS = ("output", "completion_tokens", "output_tokens", "completionTokens")
_CACHE_READ_KEYS = ("input_cache_read", "input_cached_tokens", "cache_read_input_tokens", "input_cached")
_CACHE_WRITE_KEYS = ("input_cache_creation", "input_cache_write", "cache_creation_input_tokens")
_REASONING_KEYS = ("output_reasoning", "output_reasoning_tokens", "reasoning_tokens")
# Nested provider usage objects (OpenAI chat / responses) and the detail keys inside them.
_INPUT_DETAILS = ("prompt_tokens_details", "input_tokens_details")
_OUTPUT_DETAILS = ("completion_tokens_details", "output_tokens_details")

Usage = tuple[int | None, int | None, int | None, int | None, int | None]
_NO_USAGE: Usage = (None, None, None, None, None)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _object(text: Any) -> dict[str, Any] | None:
    """The JSON object in an attribute (text, or already a kvlist dict); None for anything else."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _first(doc: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        n = as_count(doc.get(key))
        if n is not None:
            return n
    return None


def _detail(doc: dict[str, Any], containers: tuple[str, ...], key: str) -> int | None:
    for container in containers:
        inner = doc.get(container)
        if isinstance(inner, dict):
            n = as_count(inner.get(key))
            if n is not None:
                return n
    return None


def usage_details(text: Any) -> Usage:
    """(input, output, cache_read, cache_write, reasoning) tokens of a usage_details attribute, in
    OTel semantics (totals include their cache/reasoning parts); Nones for unreadable input."""
    doc = _object(text)
    if doc is None:
        return _NO_USAGE
    cache_read = _first(doc, _CACHE_READ_KEYS)
    cache_write = _first(doc, _CACHE_WRITE_KEYS)
    reasoning = _first(doc, _REASONING_KEYS)
    raw_input = _first(doc, _INPUT_KEYS)
    raw_output = _first(doc, _OUTPUT_KEYS)
    if "input" in doc or "output" in doc:
        # Langfuse's model: categories are exclusive; a total is the sum of its own and its parts.
        input_parts = sum(as_count(v) or 0 for k, v in doc.items() if k.startswith("input_"))
        output_parts = sum(as_count(v) or 0 for k, v in doc.items() if k.startswith("output_"))
        if raw_input is not None or input_parts:
            raw_input = (raw_input or 0) + input_parts
        if raw_output is not None or output_parts:
            raw_output = (raw_output or 0) + output_parts
    else:
        # A provider's own usage object: totals already include the details.
        if cache_read is None:
            cache_read = _detail(doc, _INPUT_DETAILS, "cached_tokens")
        if reasoning is None:
            reasoning = _detail(doc, _OUTPUT_DETAILS, "reasoning_tokens")
    return raw_input, raw_output, cache_read, cache_write, reasoning


def cost_details(text: Any) -> float | None:
    """The USD total of a cost_details attribute: its `total`, else the sum of its parts."""
    doc = _object(text)
    if doc is None:
        return None
    total = as_float(doc.get("total"))
    if total is not None:
        return total if total >= 0 else None
    parts = [as_float(v) for v in doc.values()]
    known = [p for p in parts if p is not None and p >= 0]
    return sum(known) if known else None


def completion_start_us(text: Any) -> int | None:
    """Microseconds since the epoch of a completion_start_time attribute (JSON text of an ISO 8601
    time, or the bare time); None when it is not a time."""
    if not isinstance(text, str) or not text:
        return None
    raw = text.strip().strip('"')
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
