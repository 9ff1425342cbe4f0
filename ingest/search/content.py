"""What of a stored span is searchable content, as (field, text) pairs.

Fields: the run's task and answer, step thoughts and observations, LLM input/output messages, tool
arguments and results, foreign clients' input/output values, the status message of a failed span and
the type, message and stack trace of recorded exceptions. Each field is its own document, so a hit says
where it matched (e.g. `gen_ai.tool.call.result`), and is cut to MAX_FIELD_CHARS so one huge attribute
cannot dominate the index's size.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic_core import from_json

from tracer import conventions as c

MAX_FIELD_CHARS = 32_768
STATUS_FIELD = "status_message"
EVENTS_FIELD = "events"  # exception type/message/stack trace and guard messages of the span's events


def _text(value: Any) -> str:
    """Attribute values as text: strings as they are, anything else (message lists) as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(raw: Any) -> Any:
    """The stored JSON text parsed (pydantic-core's parser, already installed with pydantic: ~2.5x the
    stdlib's speed on a span's attributes, which every indexed span pays once)."""
    if raw is None or isinstance(raw, dict | list):
        return raw
    try:
        return from_json(raw)
    except (TypeError, ValueError):
        return None


def content_fields(status_message: str | None, attributes: Any, events: Any) -> Iterator[tuple[str, str]]:
    """The span's searchable (field, text) pairs; `attributes`/`events` as stored (JSON text or parsed)."""
    attrs = _loads(attributes)
    if isinstance(attrs, dict):
        for key, value in attrs.items():
            if value is None:
                continue
            if key in c.SEARCH_CONTENT_ATTRIBUTES or key.startswith(c.SEARCH_CONTENT_PREFIXES):
                text = _text(value).strip()
                if text:
                    yield key, text[:MAX_FIELD_CHARS]
    if status_message and status_message.strip():
        yield STATUS_FIELD, status_message[:MAX_FIELD_CHARS]
    evs = _loads(events)
    if isinstance(evs, list):
        parts: list[str] = []
        for event in evs:
            ev_attrs = event.get("attributes") if isinstance(event, dict) else None
            if not isinstance(ev_attrs, dict):
                continue
            # an exception event's type, message and trace; any event's content (a guard's message)
            for key in (c.EXCEPTION_TYPE, c.EXCEPTION_MESSAGE, c.EXCEPTION_STACKTRACE, c.GUARD_MESSAGE):
                if ev_attrs.get(key):
                    parts.append(_text(ev_attrs[key]))
        if parts:
            yield EVENTS_FIELD, "\n".join(parts)[:MAX_FIELD_CHARS]
