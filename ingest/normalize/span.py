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

from ingest.normalize import langfuse
from ingest.normalize.classify import TOOL_PREFIX, operation_class
from ingest.normalize.derived import derived_columns, json_text
from ingest.normalize.values import (
    MAX_COUNT,
    as_bool,
    as_cost,
    as_count,
    as_float,
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
    "agent_id", "reasoning_tokens", "cache_creation_tokens", "time_to_first_chunk_ms", "stream",
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
CACHE_CREATION_KEYS = (
    c.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    c.OI_TOKEN_CACHE_WRITE,
    c.TRACELOOP_USAGE_CACHE_CREATION_INPUT_TOKENS,
)
REASONING_KEYS = (
    c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    c.OI_TOKEN_REASONING,
    c.TRACELOOP_USAGE_REASONING_TOKENS,
    c.LLM_USAGE_REASONING_TOKENS,
)
# A cost the client computed itself (kept as the cost, cost_source 'client'); model calls only.
CLIENT_COST_KEYS = (c.GEN_AI_USAGE_COST, c.OI_COST_TOTAL)
TOOL_NAME_KEYS = (c.GEN_AI_TOOL_NAME, c.OI_TOOL_NAME)
AGENT_NAME_KEYS = (c.GEN_AI_AGENT_NAME, c.OI_AGENT_NAME)
AGENT_VERSION_KEYS = (c.GEN_AI_AGENT_VERSION,)
LANGFUSE_VERSION_KEYS = (c.LANGFUSE_VERSION, c.LANGFUSE_RELEASE)
# Any of these on a model call means the detail look-ups are worth doing.
_CALL_DETAIL_KEYS = frozenset(
    (*CACHE_CREATION_KEYS, *REASONING_KEYS, *CLIENT_COST_KEYS, c.GEN_AI_REQUEST_STREAM,
     c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK)
)  # fmt: skip
CONVERSATION_KEYS = (c.GEN_AI_CONVERSATION_ID, c.SESSION_ID, c.TRACELOOP_ASSOCIATION_SESSION_ID)
USER_KEYS = (c.ENDUSER_ID, c.OI_USER_ID, c.TRACELOOP_ASSOCIATION_USER_ID)
ENVIRONMENT_KEYS = (c.DEPLOYMENT_ENVIRONMENT_NAME, c.DEPLOYMENT_ENVIRONMENT, c.LANGFUSE_ENVIRONMENT)  # of the resource
# One set check per span tells whether any model/identity key is there at all (most spans of a
# run name neither), instead of a miss per key.
_MODEL_KEYS = frozenset(
    (*REQUEST_MODEL_KEYS, *RESPONSE_MODEL_KEYS, *PROVIDER_KEYS, c.OI_LLM_INVOCATION_PARAMETERS)
)
_IDENTITY_KEYS = frozenset((*CONVERSATION_KEYS, *USER_KEYS))
# steplens' own run/step facts: on run roots and steps only, so one set check spares the other
# spans five look-ups and coercion calls.
_RUN_FACT_KEYS = frozenset((c.STEP_INDEX, c.RUN_STOP_REASON, c.RUN_OK, c.RUN_STEPS, c.RUN_MODE))
# Tool and agent name keys: one set check spares most spans three first_str calls.
_NAME_KEYS = frozenset((*TOOL_NAME_KEYS, *AGENT_NAME_KEYS, *AGENT_VERSION_KEYS))

# Classes whose own usage is a model call; aggregates on agent/step spans are not copied, so
# summing the column over a trace never double-counts children.
_TOKEN_CLASSES = frozenset({Op.LLM.value, Op.EMBEDDING.value})
_TOOL = Op.TOOL.value
_DERIVED_CLASSES = frozenset({_TOOL, Op.TRUNCATE.value})  # with errors, the spans with derived columns
_NO_DERIVED = (None, None, None, None, None)
_AGENT = Op.AGENT.value
_WORKFLOW = Op.WORKFLOW.value
_RUN_CLASSES = frozenset({_AGENT, _WORKFLOW})
_TRACELOOP_AGENT_KINDS = frozenset({"workflow", "agent"})
_LANGFUSE_AGENT = "agent"
_OI_AGENT = "AGENT"
# cost_source values: steplens' own steplens.cost.usd, a foreign client's reported cost, or ours.
_COST_SPAN = "span"
_COST_CLIENT = "client"
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


def _first_cost(attrs: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    """The first non-negative finite USD amount among `keys`."""
    get = attrs.get
    for key in keys:
        value = get(key)
        if value is not None:
            cost = as_cost(value)
            if cost is not None and cost >= 0:
                return cost
    return None


def _run_name(
    name: str, attrs: dict[str, Any], traceloop_kind: Any, lf_type: Any, scope: str | None
) -> tuple[str | None, str | None]:
    """(agent name, version) of an agent or workflow span that has no `gen_ai.agent.name` /
    `agent.name`, by its client's convention: Traceloop's entity, `gen_ai.workflow.name`,
    pydantic-ai's `agent_name`, an OpenInference AGENT span's `graph.node.id` (CrewAI), else the span
    name where the convention names observations by it (OpenInference AGENT and root CHAIN spans,
    smolagents' `<agent>.run` without its suffix, Langfuse agents)."""
    get = attrs.get
    if traceloop_kind.__class__ is str and traceloop_kind in _TRACELOOP_AGENT_KINDS:
        return as_str(get(c.TRACELOOP_ENTITY_NAME)), as_str(get(c.TRACELOOP_ENTITY_VERSION))
    found = as_str(get(c.GEN_AI_WORKFLOW_NAME)) or as_str(get(c.PYDANTIC_AI_AGENT_NAME))
    if found is not None:
        return found, None
    if lf_type == _LANGFUSE_AGENT:
        return name or None, None
    if c.OI_SPAN_KIND in attrs:
        found = as_str(get(c.OI_GRAPH_NODE_ID)) if get(c.OI_SPAN_KIND) == _OI_AGENT else None
        if found is None and scope == c.OI_SMOLAGENTS_SCOPE and name.endswith(c.SMOLAGENTS_RUN_SUFFIX):
            found = name[: -len(c.SMOLAGENTS_RUN_SUFFIX)] or None
        return found or name or None, None
    return None, None


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
    parent = span.parent_span_id
    operation = operation_class(name, attrs, not parent)
    # One look-up tells whether the Langfuse SDK made this span (it sets a type on every one).
    lf_type = get(c.LANGFUSE_OBSERVATION_TYPE)

    start_ns = span.start_time_unix_nano
    end_ns = span.end_time_unix_nano
    if end_ns < start_ns:
        end_ns = start_ns
    kind = span.kind
    kind_name = KIND_NAMES[kind] if 0 <= kind < 6 else "UNSPECIFIED"
    status = span.status
    code = status.code
    status_name = STATUS_NAMES[code] if 0 <= code < 3 else "UNSET"
    status_message = status.message or None

    # models and provider (one set check skips eight misses on the spans that name no model)
    request_model = response_model = provider = None
    if not _MODEL_KEYS.isdisjoint(attrs):
        request_model = first_str(attrs, REQUEST_MODEL_KEYS)
        response_model = first_str(attrs, RESPONSE_MODEL_KEYS)
        if request_model is None and c.OI_LLM_INVOCATION_PARAMETERS in attrs:
            request_model = _request_model_from_invocation(attrs)
        provider = first_str(attrs, PROVIDER_KEYS)
    if request_model is None and lf_type is not None:
        request_model = as_str(get(c.LANGFUSE_OBSERVATION_MODEL))

    # tokens and cost: a model call's own only (aggregates on agent/workflow spans never count)
    input_tokens = output_tokens = cache_read = cache_write = reasoning = None
    ttfc_ms = client_cost = stream = None
    if operation in _TOKEN_CLASSES:
        input_tokens = first_count(attrs, INPUT_TOKEN_KEYS)
        output_tokens = first_count(attrs, OUTPUT_TOKEN_KEYS)
        cache_read = first_count(attrs, CACHE_READ_KEYS)
        if not _CALL_DETAIL_KEYS.isdisjoint(attrs):  # one pass instead of a dozen misses per call
            cache_write = first_count(attrs, CACHE_CREATION_KEYS)
            reasoning = first_count(attrs, REASONING_KEYS)
            client_cost = _first_cost(attrs, CLIENT_COST_KEYS)
            stream = as_bool(get(c.GEN_AI_REQUEST_STREAM))
            ttfc_s = as_float(get(c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK))
            if ttfc_s is not None and ttfc_s >= 0:
                ttfc_ms = ttfc_s * 1000.0
        if lf_type is not None:
            lf_in, lf_out, lf_read, lf_write, lf_reasoning = langfuse.usage_details(
                get(c.LANGFUSE_OBSERVATION_USAGE_DETAILS)
            )
            input_tokens = input_tokens if input_tokens is not None else lf_in
            output_tokens = output_tokens if output_tokens is not None else lf_out
            cache_read = cache_read if cache_read is not None else lf_read
            cache_write = cache_write if cache_write is not None else lf_write
            reasoning = reasoning if reasoning is not None else lf_reasoning
            if client_cost is None:
                client_cost = langfuse.cost_details(get(c.LANGFUSE_OBSERVATION_COST_DETAILS))
            if ttfc_ms is None:
                first_us = langfuse.completion_start_us(get(c.LANGFUSE_OBSERVATION_COMPLETION_START_TIME))
                if first_us is not None and first_us * 1000 >= start_ns:
                    ttfc_ms = (first_us - start_ns // 1000) / 1000.0
    cost = get(c.COST_USD)
    if cost is not None:
        cost = as_cost(cost)
    cost_source = None
    if cost is not None:
        cost_source = _COST_SPAN
    elif client_cost is not None:
        cost, cost_source = client_cost, _COST_CLIENT
    elif prices is not None and (input_tokens is not None or output_tokens is not None):
        for candidate in (response_model, request_model):
            if candidate is not None:
                if cache_write is None and reasoning is None:
                    cost = as_cost(prices.cost_usd(candidate, input_tokens or 0, output_tokens or 0, cache_read or 0))
                else:
                    cost = as_cost(prices.cost_usd(
                        candidate, input_tokens or 0, output_tokens or 0, cache_read or 0, cache_write or 0,
                        reasoning or 0,
                    ))  # fmt: skip
                if cost is not None:
                    cost_source = _COST_TABLE
                    break

    # tools, agents, errors
    traceloop_kind = get(c.TRACELOOP_SPAN_KIND)
    tool_name = agent_name = agent_version = None
    if not _NAME_KEYS.isdisjoint(attrs):
        tool_name = first_str(attrs, TOOL_NAME_KEYS)
        agent_name = first_str(attrs, AGENT_NAME_KEYS)
        agent_version = first_str(attrs, AGENT_VERSION_KEYS)
    if tool_name is None and operation == _TOOL:
        if traceloop_kind is not None:
            tool_name = as_str(get(c.TRACELOOP_ENTITY_NAME))
        elif lf_type is not None:
            tool_name = name  # a Langfuse observation's name is its span name
        elif name.startswith(TOOL_PREFIX):
            tool_name = name[len(TOOL_PREFIX) :] or None  # `execute_tool <tool>` (GenAI span name)
    if operation in _RUN_CLASSES:
        if agent_name is None:
            agent_name, version = _run_name(name, attrs, traceloop_kind, lf_type, scope)
            agent_version = agent_version or version
        if agent_version is None and lf_type is not None:
            agent_version = first_str(attrs, LANGFUSE_VERSION_KEYS)

    if span.events:
        events, exc_type, exc_message = events_json(span)
    else:
        events, exc_type, exc_message = "[]", None, None
    is_error = code == _STATUS_ERROR
    if not is_error and lf_type is not None and get(c.LANGFUSE_OBSERVATION_LEVEL) == c.LANGFUSE_LEVEL_ERROR:
        is_error, status_name = True, STATUS_NAMES[_STATUS_ERROR]
        status_message = status_message or as_str(get(c.LANGFUSE_OBSERVATION_STATUS_MESSAGE))
    error_type = get(c.ERROR_TYPE)
    if error_type is not None:
        error_type = as_str(error_type)
    if error_type is None and is_error:
        error_type = exc_type
    if error_type is not None:
        error_type = clean_error_type(error_type)

    conversation_id = user_id = None
    if not _IDENTITY_KEYS.isdisjoint(attrs):  # mostly run roots; skip six misses on the rest
        conversation_id = first_str(attrs, CONVERSATION_KEYS)
        user_id = first_str(attrs, USER_KEYS)
    agent_id = None
    if agent_name is not None:  # an id without a name is no use to anyone; skip the look-up then
        agent_id = get(c.GEN_AI_AGENT_ID)
        if agent_id is not None and agent_id.__class__ is not str:
            agent_id = as_str(agent_id)
        agent_id = agent_id or None
    if lf_type is not None:
        conversation_id = conversation_id or as_str(get(c.LANGFUSE_SESSION_ID))
        user_id = user_id or as_str(get(c.LANGFUSE_USER_ID))
        environment = environment or as_str(get(c.LANGFUSE_ENVIRONMENT))

    step_index = stop_reason = run_ok = run_steps = run_mode = None
    if not _RUN_FACT_KEYS.isdisjoint(attrs):
        step_index = as_int32(get(c.STEP_INDEX))
        stop_reason = as_str(get(c.RUN_STOP_REASON))
        run_ok = as_bool(get(c.RUN_OK))
        run_steps = as_int32(get(c.RUN_STEPS))
        run_mode = as_str(get(c.RUN_MODE))
    has_error = is_error or error_type is not None
    if has_error or operation in _DERIVED_CLASSES:
        derived = derived_columns(operation, attrs, has_error, status_message, exc_message)
    else:
        derived = _NO_DERIVED

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
        step_index,
        stop_reason,
        run_ok,
        run_steps,
        conversation_id,
        user_id,
        environment,
        run_mode,
        to_json(attrs),
        events,
        resource_json,
        ingested_us,
        *derived,
        agent_id,
        reasoning,
        cache_write,
        ttfc_ms,
        stream,
    )
