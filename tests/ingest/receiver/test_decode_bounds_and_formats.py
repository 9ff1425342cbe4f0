"""Decoding failures: gzip bombs must stop at the limit, OTLP/JSON must equal protobuf, broken
bodies must be Malformed (400) and unknown media types UnsupportedMediaType (415)."""

from __future__ import annotations

import gzip
import json
import resource
import zlib

import pytest
from google.protobuf import json_format

from ingest.errors import Malformed, TooLarge, UnsupportedMediaType
from ingest.otlp.decode import BodyFormat, body_format, decode_body, decompress, parse_json
from ingest.otlp.validate import RejectReason

MIB = 1024 * 1024


def test_gzip_bomb_construction_inflates_to_its_stated_size(gzip_bomb_builder) -> None:
    small = gzip_bomb_builder(96)  # the 1 GiB fixture is built the same way; inflating it takes seconds
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total, pending = 0, small
    while not d.eof:
        total += len(d.decompress(pending, 16 * MIB))
        pending = d.unconsumed_tail
    assert total == 96 * MIB and d.unused_data == b""


def test_gzip_bomb_stops_at_limit_without_inflating_it_all(gzip_bomb: bytes) -> None:
    bomb = gzip_bomb
    assert len(bomb) < 2 * MIB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with pytest.raises(TooLarge):
        decompress(bomb, "gzip", 64 * MIB)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 300 * 1024, f"peak RSS grew by {grown_kib} KiB: the bomb was inflated"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw", "identity", "gzip, identity"])
def test_each_content_encoding_round_trips(coding: str, make_request) -> None:
    data = make_request().SerializeToString()
    if coding.startswith("gzip"):
        body = gzip.compress(data)
    elif coding == "deflate":
        body = zlib.compress(data)
    elif coding == "deflate-raw":
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        body, coding = c.compress(data) + c.flush(), "deflate"
    else:
        body = data
    assert decompress(body, coding, MIB) == data


def test_concatenated_gzip_members_are_one_body() -> None:
    assert decompress(gzip.compress(b"ab") + gzip.compress(b"cd"), "gzip", 100) == b"abcd"


@pytest.mark.parametrize(
    "body", [b"not gzip at all", gzip.compress(b"x" * 1000)[:-30], gzip.compress(b"x") + b"garbage"]
)
def test_broken_gzip_is_malformed(body: bytes) -> None:
    with pytest.raises(Malformed):
        decompress(body, "gzip", MIB)


def test_identity_body_over_limit_is_too_large() -> None:
    with pytest.raises(TooLarge):
        decompress(b"x" * 101, None, 100)


@pytest.mark.parametrize("ctype", [None, "", "text/plain", "application/xml", "application/grpc"])
def test_unknown_content_type_is_415(ctype: str | None) -> None:
    with pytest.raises(UnsupportedMediaType):
        body_format(ctype)


def test_content_type_parameters_are_ignored() -> None:
    assert body_format("Application/JSON; charset=utf-8") is BodyFormat.JSON
    assert body_format("application/x-protobuf") is BodyFormat.PROTOBUF


def test_unknown_content_encoding_is_415() -> None:
    with pytest.raises(UnsupportedMediaType):
        decompress(b"x", "br", MIB)


def test_json_and_protobuf_of_same_data_decode_equal(make_request, otlp_json) -> None:
    req = make_request(5)
    from_pb = decode_body(req.SerializeToString(), "application/x-protobuf", None, MIB)
    body = json.dumps(otlp_json(req)).encode()
    from_json = decode_body(body, "application/json", None, MIB)
    assert from_json.rejections == []
    assert from_json.request == from_pb.request == req


def test_json_accepts_int64_as_numbers_snake_case_and_unknown_fields(make_request, otlp_json) -> None:
    req = make_request(1)
    doc = otlp_json(req)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["startTimeUnixNano"] = int(span["startTimeUnixNano"])
    span["trace_id"] = span.pop("traceId")
    span["someFutureField"] = {"x": 1}
    doc["alsoUnknown"] = 3
    got = parse_json(json.dumps(doc).encode())
    assert got.request == req


def test_json_span_with_non_hex_id_is_rejected_alone(make_request, otlp_json) -> None:
    doc = otlp_json(make_request(3))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["spanId"] = "zz" * 8
    spans[2]["traceId"] = base64_like = "AAECAwQFBgcICQoLDA0ODw=="  # base64, not hex
    assert base64_like
    got = parse_json(json.dumps(doc).encode())
    assert [r.reason for r in got.rejections] == [RejectReason.INVALID_SPAN_ID, RejectReason.INVALID_TRACE_ID]
    assert len(got.request.resource_spans[0].scope_spans[0].spans) == 1


@pytest.mark.parametrize(
    "body",
    [b"{", b"[]", b'"x"', b"\xff\xfe\x00", b'{"resourceSpans": 5}', b'{"resourceSpans": [{"scopeSpans": [1]}]}',
     b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": ["x"]}]}]}]}',
     b"[" * 100_000],
)
def test_undecodable_json_is_malformed(body: bytes) -> None:
    with pytest.raises(Malformed):
        parse_json(body)


@pytest.mark.parametrize("body", [b"\xff\xff\xff\xff", b"\x0a\x05abc", b"\x0a" + b"\x0a\x80" * 10])
def test_undecodable_protobuf_is_malformed(body: bytes) -> None:
    with pytest.raises(Malformed):
        decode_body(body, "application/x-protobuf", None, MIB)


def test_json_format_used_for_answers_is_camel_case() -> None:
    from ingest.otlp.respond import encode, export_response
    from ingest.otlp.validate import Rejection

    out = json.loads(encode(export_response([Rejection(RejectReason.INVALID_SPAN_ID, "x")]), BodyFormat.JSON))
    assert out["partialSuccess"]["rejectedSpans"] in ("1", 1)
    assert json_format  # imported for parity with the server's encoder
