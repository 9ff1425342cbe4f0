"""Turning captured content into span attribute values: redact, shape, cap.

Every content attribute (conventions.CONTENT_ATTRIBUTES) goes through one `ContentPolicy`, so the
three promises hold in one place: nothing is recorded while capture is off, the redactor runs
before anything is set, and no attribute exceeds `max_bytes` of UTF-8 (cut on a character
boundary, with an explicit marker so a reader knows the text is incomplete).

JSON attributes (messages, tool arguments) stay valid JSON when capped: long string leaves are
shortened instead of cutting the document, because ingest and dashboards parse them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tracer.redact import SECRET_KEY_NAMES, Redactor, build_redactor

DEFAULT_MAX_BYTES = 16 * 1024
_MIN_MAX_BYTES = 64


def truncation_marker(dropped_bytes: int) -> str:
    return f"…[steplens: truncated {dropped_bytes} bytes]"


def cap_utf8(text: str, max_bytes: int) -> str:
    """Cut `text` to at most `max_bytes` UTF-8 bytes including the marker, never mid-character."""
    if len(text) * 4 <= max_bytes:  # cannot exceed the limit whatever the characters are
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    dropped = len(data)  # upper bound for sizing the marker; fixed below
    marker = truncation_marker(dropped)
    keep = max(0, max_bytes - len(marker.encode()))
    head = data[:keep].decode("utf-8", "ignore")
    marker = truncation_marker(len(data) - len(head.encode("utf-8", "surrogatepass")))
    return head + marker


def _redact_tree(value: Any, redact: Redactor, key: str | None = None) -> Any:
    """Redact every string leaf; a value under a secret-looking key is hidden entirely."""
    if isinstance(value, str):
        if key is not None and SECRET_KEY_NAMES.match(key):
            return "[REDACTED:secret]"
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _redact_tree(v, redact, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(v, redact) for v in value]
    if value is None or isinstance(value, bool | int | float):
        if key is not None and value is not None and SECRET_KEY_NAMES.match(key):
            return "[REDACTED:secret]"
        return value
    return redact(str(value))


def _string_leaves(value: Any, out: list[int]) -> None:
    if isinstance(value, str):
        out.append(len(value.encode("utf-8", "surrogatepass")))
    elif isinstance(value, dict):
        for v in value.values():
            _string_leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _string_leaves(v, out)


def _cap_leaves(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return cap_utf8(value, cap)
    if isinstance(value, dict):
        return {k: _cap_leaves(v, cap) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_leaves(v, cap) for v in value]
    return value


def _water_level(sizes: list[int], budget: int) -> int:
    """The largest per-leaf cap such that the capped leaves fit `budget` bytes in total."""
    if sum(sizes) <= budget:
        return max(sizes, default=0)
    lo, hi = 0, max(sizes)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def fit_json(value: Any, max_bytes: int) -> str:
    """Serialize `value`, shortening its longest strings until the document fits `max_bytes`."""
    text = _dumps(value)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= max_bytes:
        return text
    sizes: list[int] = []
    _string_leaves(value, sizes)
    if sizes:
        overhead = size - sum(sizes)
        marker_room = len(truncation_marker(10**9).encode())
        budget = max_bytes - overhead
        for _ in range(6):  # escapes make the estimate inexact; tighten a few times
            level = _water_level(sizes, max(0, budget))
            if level < marker_room:
                break
            text = _dumps(_cap_leaves(value, level))
            size = len(text.encode("utf-8", "surrogatepass"))
            if size <= max_bytes:
                return text
            budget -= size - max_bytes + len(sizes)
    # The structure alone is too big: keep a marked prefix (no longer valid JSON, but bounded).
    return cap_utf8(text, max_bytes)


# --------------------------------------------------------------------------------------------
# OTel GenAI message shape (role + parts), from duck-typed kernel objects or dicts
# --------------------------------------------------------------------------------------------


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _tool_call_part(call: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "id": _get(call, "id"), "name": _get(call, "name")}
    args = _get(call, "arguments")
    if args is not None:
        part["arguments"] = args
    return part


def genai_message(message: Any, finish_reason: str | None = None) -> dict[str, Any]:
    """One chat message (kernel `Message`, OpenAI-shaped dict, ...) as an OTel GenAI message."""
    role = str(_get(message, "role") or "user")
    parts: list[dict[str, Any]] = []
    content = _get(message, "content")
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": _get(message, "tool_call_id"), "response": content})
    elif content is not None:
        parts.append({"type": "text", "content": content})
    for call in _get(message, "tool_calls") or ():
        parts.append(_tool_call_part(call))
    out: dict[str, Any] = {"role": role, "parts": parts}
    if finish_reason is not None:
        out["finish_reason"] = finish_reason
    return out


def output_message(
    text: str | None, tool_calls: Iterable[Any] | None, finish_reason: str | None
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"type": "text", "content": text})
    for call in tool_calls or ():
        parts.append(_tool_call_part(call))
    return {"role": "assistant", "parts": parts, "finish_reason": finish_reason or "stop"}


@dataclass(frozen=True, slots=True)
class ContentPolicy:
    """Whether content is captured, and how it is cleaned before it becomes an attribute."""

    capture: bool = True
    redact: Redactor = build_redactor()
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_bytes < _MIN_MAX_BYTES:
            object.__setattr__(self, "max_bytes", _MIN_MAX_BYTES)

    def text(self, value: Any) -> str | None:
        """A plain-text content attribute value, or None when nothing should be recorded."""
        if not self.capture or value is None:
            return None
        return cap_utf8(self.redact(value if isinstance(value, str) else str(value)), self.max_bytes)

    def json(self, value: Any) -> str | None:
        """A JSON content attribute value (redacted leaf by leaf, valid JSON when capped)."""
        if not self.capture or value is None:
            return None
        if isinstance(value, str):
            try:  # arguments often arrive as a JSON string: redact inside it, keep it JSON
                value = json.loads(value)
            except ValueError:
                return self.text(value)
        try:
            return fit_json(_redact_tree(value, self.redact), self.max_bytes)
        except Exception as exc:  # noqa: BLE001 - e.g. a circular structure: say so, never crash
            return f"[steplens: content not serializable: {type(exc).__name__}]"

    def messages(self, messages: Iterable[Any] | None) -> str | None:
        if not self.capture or messages is None:
            return None
        try:
            shaped = [genai_message(m) for m in messages]
        except Exception as exc:  # noqa: BLE001 - an odd message object must not break the run
            return f"[steplens: messages not readable: {type(exc).__name__}]"
        return self.json(shaped)

    def short(self, value: str, limit: int = 256) -> str:
        """A status message or exception text: always redacted (even with capture off), kept short."""
        return cap_utf8(self.redact(value), limit)
