"""Whatever arrives (random bytes, random JSON, mutated valid protobuf, any declared type and
encoding), the receiver answers with a 2xx/4xx OTLP answer, never a 5xx, and keeps serving."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable

import grpc
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

OK_CODES = {200, 400, 413, 415}
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
CONTENT_TYPES = st.sampled_from(
    ["application/x-protobuf", "application/json", "application/json; charset=utf-8", "text/plain", ""]
)
ENCODINGS = st.sampled_from([None, "gzip", "deflate", "identity", "br", "gzip, gzip"])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=40),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=20), children, max_size=5),
    max_leaves=30,
)
otlp_keys = st.sampled_from(
    ["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "parentSpanId", "name", "kind", "attributes",
     "startTimeUnixNano", "links", "events", "status", "value", "stringValue", "intValue", "kvlistValue"]
)
otlp_like = st.recursive(
    st.none() | st.integers() | st.text(alphabet="0123456789abcdefXYZ=", max_size=34) | st.booleans(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(otlp_keys, children, max_size=5),
    max_leaves=40,
)


# JSON oddities of the kind that once got a 500 (a lone surrogate in a field name, `kind` or
# `status.code`): text with lone surrogates, NUL and the like, numbers beyond every integer type,
# non-finite floats (json.dumps writes NaN/Infinity, which json.loads accepts), numeric strings.
odd_text = st.lists(
    st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ude00", "\ud83d\ude00", "\x00", "\ufffe", "\u202e", "a", "é", "1"]),
    max_size=4,
).map("".join)
odd_scalars = (
    odd_text
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.sampled_from(["NaN", "Infinity", "1e400", "-0", "0x10", "", "18446744073709551616", "-1", "2", "SPAN_KIND_SERVER"])
    | st.booleans()
    | st.none()
)
SPAN_FIELDS = ["traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
               "droppedAttributesCount", "traceState", "flags"]
odd_any_value = st.dictionaries(
    st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "bytesValue"]) | odd_text, odd_scalars, max_size=2
)
odd_attributes = st.lists(st.fixed_dictionaries({"key": odd_text | st.text(max_size=8), "value": odd_any_value}), max_size=3)
odd_span = st.fixed_dictionaries(
    {"traceId": st.just("0102030405060708090a0b0c0d0e0f10"), "spanId": st.just("0102030405060708"), "name": st.just("s")},
    optional={
        "status": st.dictionaries(st.sampled_from(["code", "message"]) | odd_text, odd_scalars, max_size=2),
        "attributes": odd_attributes,
        "events": st.lists(st.fixed_dictionaries({"name": odd_scalars, "timeUnixNano": odd_scalars,
                                                  "attributes": odd_attributes}), max_size=2),
    },
).flatmap(lambda span: st.dictionaries(st.sampled_from(SPAN_FIELDS) | odd_text, odd_scalars, max_size=3).map(
    lambda extra: {**span, **extra}
))


def _encode(body: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    if encoding == "gzip, gzip":
        return gzip.compress(gzip.compress(body))
    return body


@pytest.fixture
def client(start_ingest_server):
    server = start_ingest_server(max_body_bytes=256 * 1024)
    with httpx.Client(base_url=server.http_url, timeout=10) as c:
        yield server, c
    # still alive and answering after the fuzzing
    assert httpx.get(server.http_url + "/readyz").status_code == 200


def _post(c: httpx.Client, body: bytes, ctype: str, encoding: str | None) -> None:
    headers = {"content-type": ctype} if ctype else {}
    if encoding:
        headers["content-encoding"] = encoding
    r = c.post("/v1/traces", content=_encode(body, encoding), headers=headers)
    assert r.status_code in OK_CODES, (r.status_code, r.text[:300])


def test_random_bytes(client) -> None:
    _, c = client

    @FUZZ
    @given(body=st.binary(max_size=2000), ctype=CONTENT_TYPES, encoding=ENCODINGS)
    def run(body: bytes, ctype: str, encoding: str | None) -> None:
        _post(c, body, ctype, encoding)

    run()


def test_random_json(client) -> None:
    _, c = client

    @FUZZ
    @given(doc=json_values | st.fixed_dictionaries({"resourceSpans": otlp_like}), encoding=ENCODINGS)
    def run(doc, encoding: str | None) -> None:
        _post(c, json.dumps(doc).encode(), "application/json", encoding)

    run()


def test_json_oddities_in_otlp_fields(client) -> None:
    """Lone surrogates, huge or non-finite numbers and numeric strings in every OTLP field (and as
    field names): always a 2xx/4xx, never a 5xx."""
    _, c = client

    @FUZZ
    @given(
        span=odd_span,
        resource_attrs=odd_attributes,
        ensure_ascii=st.booleans(),
        encoding=st.sampled_from([None, "gzip"]),
    )
    def run(span: dict, resource_attrs: list, ensure_ascii: bool, encoding: str | None) -> None:
        doc = {"resourceSpans": [{"resource": {"attributes": resource_attrs}, "scopeSpans": [{"spans": [span]}]}]}
        # ensure_ascii=False writes a lone surrogate as its raw (invalid UTF-8) bytes instead of an escape
        text = json.dumps(doc, ensure_ascii=ensure_ascii)
        _post(c, text.encode("utf-8", "surrogatepass"), "application/json", encoding)

    run()


def fuzz_mutated_protobuf(valid: bytes, grpc_target: str, method: str, post: Callable[..., None]) -> None:
    """Byte edits and truncations of a valid protobuf body, sent over HTTP with `post(body, ctype,
    encoding)` (which asserts no 5xx) and over gRPC `method` (only INVALID_ARGUMENT or
    RESOURCE_EXHAUSTED may come back). Shared by the traces and logs receivers."""
    channel = grpc.insecure_channel(grpc_target)
    export_raw = channel.unary_unary(method, request_serializer=None, response_deserializer=None)

    @FUZZ
    @given(
        edits=st.lists(
            st.tuples(st.integers(0, len(valid) - 1), st.integers(0, 255), st.sampled_from(["set", "insert", "delete"])),
            min_size=1,
            max_size=6,
        ),
        cut=st.integers(0, len(valid)),
        encoding=ENCODINGS,
    )
    def run(edits, cut: int, encoding: str | None) -> None:
        body = bytearray(valid)
        for pos, byte, op in edits:
            pos = min(pos, len(body) - 1)
            if op == "set" and body:
                body[pos] = byte
            elif op == "insert":
                body.insert(pos, byte)
            elif body:
                del body[pos]
        data = bytes(body[: max(cut, len(body) // 2)])
        post(data, "application/x-protobuf", encoding)
        try:
            export_raw(data, timeout=5)
        except grpc.RpcError as err:
            assert err.code() in {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}, err

    try:
        run()
    finally:
        channel.close()


def test_mutated_valid_protobuf_over_http_and_grpc(client, make_request) -> None:
    server, c = client
    fuzz_mutated_protobuf(
        make_request(4).SerializeToString(), server.grpc_target,
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export", lambda *a: _post(c, *a),
    )
