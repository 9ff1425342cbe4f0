"""The analytics columns of a span (`tool_decision`, `observation_tokens`, `dropped_tokens`, `truncated`,
`error_template`; ingest/schema.py ANALYTICS_SPAN_COLUMNS), computed from its attribute dict.

Why here and not in SQL at load time: the attribute dict already exists while a span is normalized
(in the normalize worker processes, on another core), whereas SQL had to parse the attributes JSON
again on the single DuckDB writer thread and copy the batch into a temporary table to add them. That
copy and parse were ~15 % of the writer's time per span; here they cost well under a microsecond,
because only tool, truncate and error spans have any of these columns.
"""

from __future__ import annotations

import math
from typing import Any

from ingest.normalize.error_template import safe_template
from ingest.normalize.values import as_bool, bounded_integer, to_json
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

# Tokens per character when a foreign client's tool span gives only the result text (no truncate
# span): the usual ~4 characters per token of English text and JSON.
CHARS_PER_TOKEN = 4.0

# Where a tool span's result text is, by convention (steplens / OTel GenAI, OpenInference, OpenLLMetry).
TOOL_RESULT_KEYS = (c.GEN_AI_TOOL_CALL_RESULT, c.OI_OUTPUT_VALUE, c.TRACELOOP_ENTITY_OUTPUT)

_TOOL = Op.TOOL.value
_TRUNCATE = Op.TRUNCATE.value
_NONE5: tuple[None, None, None, None, None] = (None, None, None, None, None)


def json_text(value: Any) -> str | None:
    """An attribute as text: strings as they are, anything else as its JSON (booleans `true`)."""
    if value is None or value.__class__ is str:
        return value
    return to_json(value)


def as_integer(value: Any) -> int | None:
    """A token count (signed: a client may report a negative delta) from an int, an integral float or
    an integer string, within ±MAX_COUNT (beyond: NULL, tallied; see values.py); None otherwise."""
    return bounded_integer(value)


def estimated_tokens(attrs: dict[str, Any]) -> int | None:
    """A tool's observation size from its result text when no truncate span tells it."""
    for key in TOOL_RESULT_KEYS:
        text = json_text(attrs.get(key))
        if text is not None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
    return None


def derived_columns(
    operation: str | None,
    attrs: dict[str, Any],
    is_error: bool,
    status_message: str | None,
    exception_message: str | None,
) -> tuple[str | None, int | None, int | None, bool | None, str | None]:
    """(tool_decision, observation_tokens, dropped_tokens, truncated, error_template) of one span.

    `is_error`: the span's status is ERROR or it has an error type. The template masks the status
    message, or else the first exception event's message.
    """
    if operation != _TOOL and operation != _TRUNCATE and not is_error:
        return _NONE5
    decision = observation = dropped = truncated = template = None
    if operation == _TOOL:
        decision = json_text(attrs.get(c.TOOL_DECISION))
        observation = estimated_tokens(attrs)
    elif operation == _TRUNCATE:
        observation = as_integer(attrs.get(c.TRUNCATE_OUTPUT_TOKENS))
        dropped = as_integer(attrs.get(c.TRUNCATE_DROPPED_TOKENS))
        truncated = as_bool(attrs.get(c.TRUNCATE_TRUNCATED))
    if is_error:
        template = safe_template(status_message if status_message is not None else exception_message)
    return decision, observation, dropped, truncated, template
