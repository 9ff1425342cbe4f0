"""Errors are data: every AnyValue type, odd numbers, skewed clocks and unknown enums become a row
(JSON that DuckDB accepts, NULL where a promoted column cannot be read), never an exception."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, datetime

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ingest.normalize import SPANS_SCHEMA, normalize_span, spans_table
from ingest.store.migrate import migrate
from tracer import conventions as c

TRACE = bytes(range(1, 17))
T0 = 1_764_000_000_000_000_000


def kv(key: str, **value) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def make_span(name: str = "s", attrs: list[KeyValue] | None = None, **fields) -> Span:
    span = Span(
        trace_id=TRACE,
        span_id=bytes(range(1, 9)),
        name=name,
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 2_500_000,
        **fields,
    )
    span.attributes.extend(attrs or [])
    return span


def request_of(*spans: Span) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(
        [kv(c.SERVICE_NAME, string_value="svc"), kv(c.DEPLOYMENT_ENVIRONMENT, string_value="dev")]
    )
    ss = rs.scope_spans.add()
    ss.scope.name = "scope"
    ss.spans.extend(spans)
    return req


def test_every_anyvalue_type_is_kept_in_the_attributes_json():
    nested = AnyValue()
    nested.kvlist_value.values.extend([kv("k", int_value=1), kv("deep", bool_value=False)])
    array = AnyValue()
    array.array_value.values.extend([AnyValue(string_value="a"), AnyValue(double_value=1.5), nested])
    attrs = [
        kv("s", string_value="héllo ✓"),
        kv("b", bool_value=True),
        kv("i", int_value=-(2**63)),
        kv("d", double_value=0.25),
        KeyValue(key="arr", value=array),
        KeyValue(key="kv", value=nested),
        kv("bytes", bytes_value=b"\x00\xffbin"),
        KeyValue(key="empty", value=AnyValue()),
        kv("nan", double_value=math.nan),
        kv("inf", double_value=-math.inf),
    ]
    row = normalize_span("p", make_span(attrs=attrs))
    got = json.loads(row["attributes"])
    assert got == {
        "s": "héllo ✓",
        "b": True,
        "i": -(2**63),
        "d": 0.25,
        "arr": ["a", 1.5, {"k": 1, "deep": False}],
        "kv": {"k": 1, "deep": False},
        "bytes": base64.b64encode(b"\x00\xffbin").decode(),
        "empty": None,
        "nan": "NaN",
        "inf": "-Infinity",
    }


def test_the_table_loads_into_duckdb_with_odd_values():
    odd = make_span(
        "chat weird",
        [
            kv(c.GEN_AI_OPERATION_NAME, string_value=c.OP_CHAT),
            kv(c.GEN_AI_REQUEST_MODEL, string_value="gpt-4o"),
            kv(c.GEN_AI_USAGE_INPUT_TOKENS, string_value="1200"),  # tokens as text
            kv(c.GEN_AI_USAGE_OUTPUT_TOKENS, int_value=-3),  # nonsense
            kv(c.STEP_INDEX, int_value=2**40),  # beyond INTEGER
            kv(c.RUN_OK, string_value="true"),
            kv("x", double_value=math.inf),
        ],
        kind=99,  # unknown enum value
        status=Status(code=7, message="?"),
    )
    skewed = make_span("skewed")
    skewed.span_id = bytes(range(2, 10))
    skewed.end_time_unix_nano = T0 - 1_000_000  # ends before it starts
    unset_end = make_span("no end")
    unset_end.span_id = bytes(range(3, 11))
    unset_end.end_time_unix_nano = 0
    table = spans_table("p", request_of(odd, skewed, unset_end), datetime(2026, 1, 1))
    assert table.schema.equals(SPANS_SCHEMA)
    con = duckdb.connect()
    migrate(con)
    con.register("batch", table)
    con.execute("INSERT INTO spans SELECT * FROM batch")
    rows = {r["name"]: r for r in con.sql("SELECT * FROM spans").to_arrow_table().to_pylist()}
    weird = rows["chat weird"]
    assert (weird["kind"], weird["status"]) == ("UNSPECIFIED", "UNSET")
    assert (weird["input_tokens"], weird["output_tokens"], weird["step_index"]) == (1200, None, None)
    assert weird["run_ok"] is True
    assert weird["cost_source"] == "price_table" and weird["cost_usd"] == pytest.approx(1200 * 2.5 / 1e6)
    for name in ("skewed", "no end"):
        assert rows[name]["duration_ms"] == 0.0 and rows[name]["end_time"] == rows[name]["start_time"]
    assert weird["environment"] == "dev" and weird["service"] == "svc"


def test_empty_request_gives_an_empty_table_of_the_right_shape():
    table = spans_table("p", ExportTraceServiceRequest(), datetime.now(UTC))
    assert table.num_rows == 0 and table.schema.equals(SPANS_SCHEMA)


def test_schema_matches_the_migrated_table_column_for_column():
    con = duckdb.connect()
    migrate(con)
    ddl = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'spans' ORDER BY ordinal_position"
    )
    assert [r[0] for r in ddl.fetchall()] == SPANS_SCHEMA.names
    not_null = {"project", "trace_id", "span_id", "name", "kind", "start_time", "end_time", "duration_ms",
                "status", "operation", "ingested_at"}  # fmt: skip
    assert {f.name for f in SPANS_SCHEMA if not f.nullable} == not_null


def test_times_are_utc_microseconds_and_ingested_at_is_converted_to_utc():
    from datetime import timedelta, timezone

    paris = timezone(timedelta(hours=1))
    row = normalize_span("p", make_span(), ingested_at=datetime(2026, 1, 1, 13, 0, tzinfo=paris))
    assert row["ingested_at"] == datetime(2026, 1, 1, 12, 0)
    assert row["start_time"] == datetime(1970, 1, 1) + timedelta(microseconds=T0 // 1000)
    assert row["duration_ms"] == 2.5
    assert row["parent_span_id"] is None and row["trace_id"] == TRACE.hex()


def test_error_type_falls_back_to_the_exception_event_only_for_error_spans():
    failed = make_span("f", status=Status(code=Status.STATUS_CODE_ERROR, message="boom"))
    event = failed.events.add(name=c.EXCEPTION_EVENT, time_unix_nano=T0 + 10)
    event.attributes.extend([kv(c.EXCEPTION_TYPE, string_value="ValueError")])
    ok = make_span("ok")
    ok.events.add(name=c.EXCEPTION_EVENT, time_unix_nano=T0).attributes.extend(
        [kv(c.EXCEPTION_TYPE, string_value="Handled")]
    )
    row_failed, row_ok = normalize_span("p", failed), normalize_span("p", ok)
    assert (row_failed["error_type"], row_failed["status_message"]) == ("ValueError", "boom")
    assert row_ok["error_type"] is None
    events = json.loads(row_failed["events"])
    assert events == [
        {
            "name": "exception",
            "time": "2025-11-24T16:00:00+00:00",
            "attributes": {"exception.type": "ValueError"},
        }
    ]
