"""A span with a 12-60 MiB attribute, a span with a million attributes (or events, or links) and a
body of exactly 64 MiB are stored cut to the documented limits, with marks saying what was cut
and how big it was, and the client is told in partial_success (rejected 0). The other spans of the request are
stored whole; nothing is dead-lettered.

Before: such bodies were acknowledged, then DuckDB could run out of memory loading them and the
record was dead-lettered (acknowledged, then lost)."""

from __future__ import annotations

import os

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tests.ingest.api.harness import BACKENDS
from tracer import conventions as c

MIB = 1024 * 1024
VALUE_LIMIT = 1 * MIB  # the default max_attribute_value_bytes
COUNT_LIMIT = 4096  # the default max_attributes_per_span
EVENT_LIMIT = 1024  # the default max_events_per_span
T0 = 1_767_268_800_000_000_000  # 2026-01-01T12:00:00Z in ns
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (messages, strings): how a huge span is built without
    materializing a million Python KeyValue objects."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _span(trace_id: bytes, name: str, parent: bytes = b"", attrs: dict[str, str] | None = None) -> tuple[bytes, bytes]:
    span_id = os.urandom(8)
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 1_000_000,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in (attrs or {}).items()],
    )
    return span_id, span.SerializeToString()


def _many_attributes(n: int) -> bytes:
    """`n` int attributes `k0..k{n-1}` as Span field 9 entries, appended to a serialized span."""
    return b"".join(_field(9, KeyValue(key=f"k{i}", value=AnyValue(int_value=i)).SerializeToString()) for i in range(n))


def _many_events_and_links(n: int) -> bytes:
    """`n` events `e0..` (Span field 11) and `n` links (field 13), appended to a serialized span."""
    events = b"".join(_field(11, Span.Event(name=f"e{i}", time_unix_nano=T0 + i).SerializeToString()) for i in range(n))
    link = Span.Link(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString()
    return events + _field(13, link) * n


def _body(spans: list[bytes]) -> bytes:
    scope = ScopeSpans().SerializeToString() + b"".join(_field(2, s) for s in spans)
    resource = ResourceSpans().SerializeToString() + _field(2, scope)
    return _field(1, resource)


def _post(url: str, body: bytes) -> ExportTraceServiceResponse:
    r = httpx.post(url + "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    return ExportTraceServiceResponse.FromString(r.content)


def _trace(server, trace_id: bytes) -> dict[str, dict]:
    assert server.store.wait_loaded(120)
    r = httpx.get(f"{server.http_url}/api/traces/{trace_id.hex()}", timeout=60)
    assert r.status_code == 200, r.text[:300]
    return {s["name"]: s for s in r.json()["spans"]}


@pytest.fixture
def server(start_ingest_server):
    return start_ingest_server()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size_mib", [12, 60])
def test_huge_attribute_is_truncated_with_a_mark_and_the_other_spans_stored(server, size_mib: int) -> None:
    tid = os.urandom(16)
    root_id, root = _span(tid, "root", attrs={"note": "small"})
    _, big = _span(tid, "big", root_id, attrs={"payload": "é" * (size_mib * MIB // 2), "other": "kept"})
    _, sibling = _span(tid, "sibling", root_id, attrs={"payload": "x" * 1000})
    answer = _post(server.http_url, _body([root, big, sibling]))
    assert answer.partial_success.rejected_spans == 0
    assert "truncated" in answer.partial_success.error_message and "'payload'" in answer.partial_success.error_message

    spans = _trace(server, tid)
    assert set(spans) == {"root", "big", "sibling"}
    attrs = spans["big"]["attributes"]
    assert attrs[c.INGEST_TRUNCATED] == {"payload": size_mib * MIB}  # what was cut, and its original size
    kept = attrs["payload"]
    assert len(kept.encode()) <= VALUE_LIMIT and len(kept.encode()) > VALUE_LIMIT - 4 and set(kept) == {"é"}
    assert attrs["other"] == "kept"
    assert spans["sibling"]["attributes"]["payload"] == "x" * 1000
    assert c.INGEST_TRUNCATED not in spans["sibling"]["attributes"]
    assert server.store.stats().records_dead_lettered == 0
    assert server.metrics.values_truncated._value.get() == 1


def test_span_with_a_million_attributes_keeps_the_first_ones_and_counts_the_rest(server) -> None:
    tid = os.urandom(16)
    root_id, root = _span(tid, "root")
    _, wide = _span(tid, "wide", root_id)
    wide += _many_attributes(1_000_000)
    answer = _post(server.http_url, _body([root, wide]))
    assert answer.partial_success.rejected_spans == 0
    assert "dropped" in answer.partial_success.error_message

    spans = _trace(server, tid)
    attrs = spans["wide"]["attributes"]
    assert attrs[c.INGEST_DROPPED_ATTRIBUTES] == 1_000_000 - COUNT_LIMIT
    assert {k: v for k, v in attrs.items() if k.startswith("k")} == {f"k{i}": i for i in range(COUNT_LIMIT)}
    assert set(spans) == {"root", "wide"}
    assert server.store.stats().records_dead_lettered == 0
    assert server.metrics.attributes_dropped._value.get() == 1_000_000 - COUNT_LIMIT


def test_span_with_a_million_events_and_links_keeps_the_first_ones(server) -> None:
    tid = os.urandom(16)
    root_id, root = _span(tid, "root")
    _, busy = _span(tid, "busy", root_id)
    busy += _many_events_and_links(1_000_000)
    answer = _post(server.http_url, _body([root, busy]))
    assert answer.partial_success.rejected_spans == 0 and "event(s)/link(s)" in answer.partial_success.error_message

    spans = _trace(server, tid)
    assert [e["name"] for e in spans["busy"]["events"]] == [f"e{i}" for i in range(EVENT_LIMIT)]
    assert spans["busy"]["attributes"][c.INGEST_DROPPED_EVENTS] == 2 * (1_000_000 - EVENT_LIMIT)
    assert server.metrics.events_dropped._value.get() == 2 * (1_000_000 - EVENT_LIMIT)
    assert server.store.stats().records_dead_lettered == 0


def test_body_of_exactly_the_size_limit_is_stored(server) -> None:
    limit = server.settings.max_body_bytes
    tid = os.urandom(16)
    root_id, root = _span(tid, "root")
    spans = [root] + [_span(tid, f"s{i}", root_id, attrs={"blob": "y" * (2 * MIB)})[1] for i in range(31)]
    pad, body = 0, b""
    for _ in range(10):  # the length varints grow with the padding: converge on the exact size
        body = _body([*spans, _span(tid, "pad", root_id, attrs={"p": "z" * pad})[1]])
        if len(body) == limit:
            break
        pad += limit - len(body)
    assert len(body) == limit
    answer = _post(server.http_url, body)
    assert answer.partial_success.rejected_spans == 0

    stored = _trace(server, tid)
    assert len(stored) == 33
    assert all(stored[f"s{i}"]["attributes"][c.INGEST_TRUNCATED] == {"blob": 2 * MIB} for i in range(31))
    assert server.store.stats().records_dead_lettered == 0


def test_grpc_cuts_the_same_way(server) -> None:
    tid = os.urandom(16)
    root_id, root = _span(tid, "root")
    _, big = _span(tid, "big", root_id, attrs={"payload": "q" * (12 * MIB)})
    request = ExportTraceServiceRequest.FromString(_body([root, big]))
    with grpc.insecure_channel(server.grpc_target, options=[("grpc.max_send_message_length", 64 * MIB)]) as channel:
        export = channel.unary_unary(
            EXPORT,
            request_serializer=ExportTraceServiceRequest.SerializeToString,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        answer = export(request, timeout=60)
    assert answer.partial_success.rejected_spans == 0 and answer.partial_success.error_message
    attrs = _trace(server, tid)["big"]["attributes"]
    assert attrs[c.INGEST_TRUNCATED] == {"payload": 12 * MIB} and attrs["payload"] == "q" * VALUE_LIMIT


def test_json_body_is_cut_too(server, otlp_json) -> None:
    tid = os.urandom(16)
    root_id, root = _span(tid, "root")
    _, big = _span(tid, "big", root_id, attrs={"payload": "j" * (3 * MIB)})
    doc = otlp_json(ExportTraceServiceRequest.FromString(_body([root, big])))
    r = httpx.post(server.http_url + "/v1/traces", json=doc, timeout=60)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["partialSuccess"]["errorMessage"]
    assert _trace(server, tid)["big"]["attributes"][c.INGEST_TRUNCATED] == {"payload": 3 * MIB}


@pytest.mark.parametrize("backend", BACKENDS)
def test_name_event_and_resource_values_are_cut_and_marked_too(server) -> None:
    tid = os.urandom(16)
    span = Span(
        trace_id=tid, span_id=os.urandom(8), name="n" * (2 * MIB), start_time_unix_nano=T0, end_time_unix_nano=T0 + 1,
        events=[Span.Event(name=c.EXCEPTION_EVENT, time_unix_nano=T0,
                           attributes=[KeyValue(key=c.EXCEPTION_STACKTRACE, value=AnyValue(string_value="s" * (3 * MIB)))])],
    )
    span.status.message = "m" * (2 * MIB)
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.append(KeyValue(key="host.notes", value=AnyValue(string_value="r" * (5 * MIB))))
    rs.scope_spans.add().spans.append(span)
    answer = _post(server.http_url, request.SerializeToString())
    assert answer.partial_success.rejected_spans == 0

    assert server.store.wait_loaded(60)
    (stored,) = httpx.get(f"{server.http_url}/api/traces/{tid.hex()}", timeout=60).json()["spans"]
    assert stored["name"] == "n" * VALUE_LIMIT and stored["status_message"] == "m" * VALUE_LIMIT
    assert stored["events"][0]["attributes"][c.EXCEPTION_STACKTRACE] == "s" * VALUE_LIMIT
    assert stored["attributes"][c.INGEST_TRUNCATED] == {
        "(name)": 2 * MIB, "(status.message)": 2 * MIB, f"(events[0]) {c.EXCEPTION_STACKTRACE}": 3 * MIB,
    }
    with server.store.read() as cur:
        (resource,) = cur.execute("SELECT resource FROM spans").fetchone()
    assert f'"{c.INGEST_TRUNCATED}":{{"host.notes":{5 * MIB}}}' in resource
    assert '"host.notes":"' + "r" * VALUE_LIMIT + '"' in resource
