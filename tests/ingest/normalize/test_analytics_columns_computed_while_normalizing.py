"""The analytics columns (tool decision, observation and dropped tokens, truncated, error template) are
computed while a span is normalized, from its attributes and events, for tool, truncate and error
spans only; every other span leaves them NULL."""

from __future__ import annotations

import json

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ingest.normalize import normalize_span
from tracer import conventions as c

TRACE = bytes(range(1, 17))
T0 = 1_764_000_000_000_000_000
COLUMNS = ("tool_decision", "observation_tokens", "dropped_tokens", "truncated", "error_template")


def kv(key: str, **value) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def derived(name: str, attrs: list[KeyValue], status: Status | None = None, events=()) -> tuple:
    span = Span(trace_id=TRACE, span_id=bytes(range(1, 9)), name=name, start_time_unix_nano=T0,
                end_time_unix_nano=T0 + 1_000_000, status=status or Status())
    span.attributes.extend(attrs)
    span.events.extend(events)
    row = normalize_span("p", span)
    return tuple(row[column] for column in COLUMNS)


TOOL = kv(c.GEN_AI_OPERATION_NAME, string_value=c.OP_EXECUTE_TOOL)


def test_tool_span_decision_and_observation_estimated_from_its_result():
    result = kv(c.GEN_AI_TOOL_CALL_RESULT, string_value="x" * 9)  # 9 characters: ceil(9 / 4) tokens
    decision = kv(c.TOOL_DECISION, string_value="denied")
    assert derived("execute_tool search", [TOOL, result, decision]) == ("denied", 3, None, None, None)


def test_structured_tool_result_is_measured_as_its_json_text():
    values = ArrayValue(values=[AnyValue(string_value="ab"), AnyValue(int_value=7)])
    result = kv(c.GEN_AI_TOOL_CALL_RESULT, array_value=values)
    text = json.dumps(["ab", 7], separators=(",", ":"))
    assert derived("execute_tool search", [TOOL, result])[1] == -(-len(text) // 4)


def test_foreign_clients_tool_outputs_are_measured_too():
    openinference = [kv(c.OI_SPAN_KIND, string_value="TOOL"), kv(c.OI_OUTPUT_VALUE, string_value="y" * 40)]
    assert derived("lookup", openinference)[:2] == (None, 10)


def test_truncate_span_counts_with_lenient_types():
    attrs = [
        kv(c.TRUNCATE_OUTPUT_TOKENS, int_value=300),
        kv(c.TRUNCATE_DROPPED_TOKENS, string_value="120"),
        kv(c.TRUNCATE_TRUNCATED, string_value="true"),
    ]
    assert derived(c.SPAN_TRUNCATE, attrs) == (None, 300, 120, True, None)
    odd = [kv(c.TRUNCATE_OUTPUT_TOKENS, string_value="lots"), kv(c.TRUNCATE_TRUNCATED, int_value=5)]
    assert derived(c.SPAN_TRUNCATE, odd) == (None, None, None, None, None)


def test_error_template_from_the_status_message_else_the_exception_event():
    failed = Status(code=Status.STATUS_CODE_ERROR, message="lookup timed out after 30 s")
    assert derived("execute_tool lookup", [TOOL], failed)[4] == "lookup timed out after <num> s"
    event = Span.Event(name=c.EXCEPTION_EVENT, time_unix_nano=T0,
                       attributes=[kv(c.EXCEPTION_MESSAGE, string_value="row 17 missing")])
    typed_only = [kv(c.ERROR_TYPE, string_value="KeyError")]
    assert derived("chat gpt-4o", typed_only, events=[event])[4] == "row <num> missing"


def test_ordinary_spans_have_none_of_them():
    chat = [kv(c.GEN_AI_OPERATION_NAME, string_value=c.OP_CHAT), kv(c.GEN_AI_TOOL_CALL_RESULT, string_value="z")]
    assert derived("chat gpt-4o", chat) == (None,) * 5
