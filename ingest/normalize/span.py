"""One OTLP span → one row of the `spans` table (a tuple in ROW_COLUMNS order).

Why a tuple and not a dict: this runs once per ingested span on the single writer thread, and
flattening attributes in Python is the cost of ingest. The attribute dict is built once (it is
needed for the JSON column anyway), promoted columns are plain `dict.get` look-ups on it in
priority order (current OTel GenAI name, deprecated name, OpenInference, OpenLLMetry), and the
row is a tuple that `table.py` transposes into Arrow columns.

Timing oddities are repaired, never rejected: an unset or earlier-than-start end time becomes the
start time (duration 0), so a clock-skewed span is kept and cannot draw a negative bar.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ingest.normalize.classify import operation_class
from ingest.normalize.derived import derived_columns, json_text
from ingest.normalize.values import (
    MAX_COUNT,
    as_bool,
    as_cost,
    as_count,
    as_int32,
    as_str,
    attributes,
    to_json,
)
from tracer import conventions as c
from tracer.conventions import OperationClass as Op
from tracer.pricing import PriceTable

# Column order of the produced tuples; table.py checks it against the DDL schema.
ROW_COLUMNS: tuple[str, ...] = (
    "project", "trace_id", "span_id", "parent_span_id", "service", "scope", "name", "kind",
    "start_time", "end_time", "duration_ms", "status", "status_message", "operation",
    "agent_name", "agent_version", "model", "response_model", "provider",
    "input_tokens", "output_tokens", "cache_read_tokens", "cost_usd", "cost_source",
    "tool_name", "error_type", "step_index", "stop_reason", "run_ok", "run_steps",
    "conversation_id", "user_id", "environment", "run_mode",
    "attributes", "events", "resource", "ingested_at",
    "tool_decision", "observation_tokens", "dropped_tokens", "truncated", "error_template",
)  # fmt: skip

KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_NAMES = ("UNSET", "OK", "ERROR")
_STATUS_ERROR = 2

# Attribute keys per promoted column, most authoritative first.
REQUEST_MODEL_KEYS = (c.GEN_AI_REQUEST_MODEL,)
RESPONSE_MODEL_KEYS = (c.GEN_AI_RESPONSE_MODEL, c.OI_LLM_MODEL_NAME)
PROVIDER_KEYS = (c.GEN_AI_PROVIDER_NAME, c.GEN_AI_SYSTEM, c.OI_LLM_PROVIDER, c.OI_LLM_SYSTEM)
INPUT_TOKEN_KEYS = (
    c.GEN_AI_USAGE_INPUT_TOKENS,
    c.GEN_AI_USAGE_PROMPT_TOKENS,
    c.OI_TOKEN_PROMPT,
    c.LLM_USAGE_PROMPT_TOKENS,
)
OUTPUT_TOKEN_KEYS = (
    c.GEN_AI_USAGE_OUTPUT_TOKENS,
    c.GEN_AI_USAGE_COMPLETION_TOKENS,
    c.OI_TOKEN_COMPLETION,
    c.LLM_USAGE_COMPLETION_TOKENS,
)
CACHE_READ_KEYS = (
    c.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    c.OI_TOKEN_CACHE_READ,
    c.TRACELOOP_USAGE_CACHE_READ_INPUT_TOKENS,
)
TOOL_NAME_KEYS = (c.GEN_AI_TOOL_NAME, c.OI_TOOL_NAME)
AGENT_NAME_KEYS = (c.GEN_AI_AGENT_NAME, c.OI_AGENT_NAME)
AGENT_VERSION_KEYS = (c.GEN_AI_AGENT_VERSION,)
CONVERSATION_KEYS = (c.GEN_AI_CONVERSATION_ID, c.SESSION_ID, c.TRACELOOP_ASSOCIATION_SESSION_ID)
USER_KEYS = (c.ENDUSER_ID, c.OI_USER_ID, c.TRACELOOP_ASSOCIATION_USER_ID)
ENVIRONMENT_KEYS = (c.DEPLOYMENT_ENVIRONMENT_NAME, c.DEPLOYMENT_ENVIRONMENT)

# Classes whose own usage is a model call; aggregates on agent/step spans are not copied, so
# summing the column over a trace never double-counts children.
_TOKEN_CLASSES = frozenset({Op.LLM.value, Op.EMBEDDING.value})
_TOOL = Op.TOOL.value
_AGENT = Op.AGENT.value
_TRACELOOP_AGENT_KINDS = frozenset({"workflow", "agent"})
_COST_SPAN = "span"
_COST_TABLE = "price_table"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def first_str(attrs: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    get = attrs.get
    for key in keys:
        value = get(key)
        if value is not None:
            if value.__class__ is str:  # the common case, without a call
                if value:
                    return value
                continue
            text = as_str(value)
            if text is not None:
                return text
    return None


def first_count(attrs: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    get = attrs.get
    for key in keys:
        value = get(key)
        if value is not None:
            if value.__class__ is int and 0 <= value <= MAX_COUNT:
                return value
            n = as_count(value)
            if n is not None:
                return n
    return None


def iso_time(unix_nano: int) -> str:
    """ISO 8601 UTC with microseconds (what JSON consumers and DuckDB parse)."""
    return (_EPOCH + timedelta(microseconds=unix_nano // 1000)).isoformat()


def clean_error_type(value: str) -> str:
    """`<class 'openai.InternalServerError'>` (the official OpenAI instrumentation) → the class name
    as written, so the same failure groups together whichever client reported it."""
    if value.startswith("<class '") and value.endswith("'>"):
        return value[8:-2]
    return value


def events_json(span: Span) -> tuple[str, str | None, str | None]:
    """The events column and, for error typing, the first `exception` event's type and the first
    event's `exception.message` (as text)."""
    if not span.events:
        return "[]", None, None
    exc_type = exc_message = None
    out = []
    for event in span.events:
        attrs = attributes(event.attributes)
        if exc_type is None and event.name == c.EXCEPTION_EVENT:
            exc_type = as_str(attrs.get(c.EXCEPTION_TYPE))
        if exc_message is None:
            exc_message = json_text(attrs.get(c.EXCEPTION_MESSAGE))
        out.append({"name": event.name, "time": iso_time(event.time_unix_nano), "attributes": attrs})
    return to_json(out), exc_type, exc_message


def _request_model_from_invocation(attrs: dict[str, Any]) -> str | None:
    """OpenInference puts the requested model only inside `llm.invocation_parameters` (JSON text);
    `llm.model_name` is the response's model and is absent on failed calls."""
    raw = attrs.get(c.OI_LLM_INVOCATION_PARAMETERS)
    if not isinstance(raw, str) or '"model"' not in raw:
        return None
    try:
        params = json.loads(raw)
    except ValueError:
        return None
    return as_str(params.get("model")) if isinstance(params, dict) else None


def span_row(
    span: Span,
    project: str,
    service: str | None,
    scope: str | None,
    environment: str | None,
    resource_json: str,
    ingested_us: int,
    prices: PriceTable | None,
) -> tuple:
    """The row of one span, in ROW_COLUMNS order (timestamps as integer microseconds)."""
    attrs = attributes(span.attributes)
    get = attrs.get
    name = span.name
    operation = operation_class(name, attrs)

    start_ns = span.start_time_unix_nano
    end_ns = span.end_time_unix_nano
    if end_ns < start_ns:
        end_ns = start_ns
    kind = span.kind
    kind_name = KIND_NAMES[kind] if 0 <= kind < 6 else "UNSPECIFIED"
    status = span.status
    code = status.code
    status_name = STATUS_NAMES[code] if 0 <= code < 3 else "UNSET"

    # models and provider
    request_model = first_str(attrs, REQUEST_MODEL_KEYS)
    response_model = first_str(attrs, RESPONSE_MODEL_KEYS)
    if request_model is None and c.OI_LLM_INVOCATION_PARAMETERS in attrs:
        request_model = _request_model_from_invocation(attrs)
    provider = first_str(attrs, PROVIDER_KEYS)

    # tokens and cost
    input_tokens = output_tokens = cache_read = None
    if operation in _TOKEN_CLASSES:
        input_tokens = first_count(attrs, INPUT_TOKEN_KEYS)
        output_tokens = first_count(attrs, OUTPUT_TOKEN_KEYS)
        cache_read = first_count(attrs, CACHE_READ_KEYS)
    cost = as_cost(get(c.COST_USD))
    cost_source = None
    if cost is not None:
        cost_source = _COST_SPAN
    elif prices is not None and (input_tokens is not None or output_tokens is not None):
        for candidate in (response_model, request_model):
            if candidate is not None:
                cost = as_cost(prices.cost_usd(candidate, input_tokens or 0, output_tokens or 0, cache_read or 0))
                if cost is not None:
                    cost_source = _COST_TABLE
                    break

    # tools, agents, errors
    traceloop_kind = get(c.TRACELOOP_SPAN_KIND)
    tool_name = first_str(attrs, TOOL_NAME_KEYS)
    if tool_name is None and operation == _TOOL and traceloop_kind is not None:
        tool_name = as_str(get(c.TRACELOOP_ENTITY_NAME))
    agent_name = first_str(attrs, AGENT_NAME_KEYS)
    agent_version = first_str(attrs, AGENT_VERSION_KEYS)
    if agent_name is None and operation == _AGENT and traceloop_kind in _TRACELOOP_AGENT_KINDS:
        agent_name = as_str(get(c.TRACELOOP_ENTITY_NAME))
        agent_version = agent_version or as_str(get(c.TRACELOOP_ENTITY_VERSION))

    events, exc_type, exc_message = events_json(span)
    error_type = as_str(get(c.ERROR_TYPE))
    if error_type is None and code == _STATUS_ERROR:
        error_type = exc_type
    if error_type is not None:
        error_type = clean_error_type(error_type)

    parent = span.parent_span_id
    status_message = status.message or None
    return (
        project,
        span.trace_id.hex(),
        span.span_id.hex(),
        parent.hex() if parent else None,
        service,
        scope,
        name,
        kind_name,
        start_ns // 1000,
        end_ns // 1000,
        (end_ns - start_ns) / 1e6,
        status_name,
        status_message,
        operation,
        agent_name,
        agent_version,
        request_model or response_model,
        response_model,
        provider,
        input_tokens,
        output_tokens,
        cache_read,
        cost,
        cost_source,
        tool_name,
        error_type,
        as_int32(get(c.STEP_INDEX)),
        as_str(get(c.RUN_STOP_REASON)),
        as_bool(get(c.RUN_OK)),
        as_int32(get(c.RUN_STEPS)),
        first_str(attrs, CONVERSATION_KEYS),
        first_str(attrs, USER_KEYS),
        environment,
        as_str(get(c.RUN_MODE)),
        to_json(attrs),
        events,
        resource_json,
        ingested_us,
        *derived_columns(operation, attrs, code == _STATUS_ERROR or error_type is not None, status_message, exc_message),
    )
