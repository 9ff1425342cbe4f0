"""`POST /v1/logs` and `LogsService/Export` answer whatever arrives (random bytes, random OTLP-like
JSON, mutated valid protobuf, any declared type and encoding) with a 2xx/4xx OTLP answer, never a
5xx, and keep serving; the traces fuzz test's strategies are reused."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.ingest.receiver.test_fuzzed_bodies_never_cause_5xx import (
    CONTENT_TYPES,
    ENCODINGS,
    FUZZ,
    OK_CODES,
    _encode,
    fuzz_mutated_protobuf,
    json_values,
)
from tests.support.genai_logs import chat_with_events, encode_logs

log_keys = st.sampled_from(
    ["resourceLogs", "scopeLogs", "logRecords", "traceId", "spanId", "eventName", "body", "attributes",
     "timeUnixNano", "observedTimeUnixNano", "severityNumber", "severityText", "flags", "value", "stringValue",
     "intValue", "kvlistValue", "arrayValue", "values", "key"]
)
logs_like = st.recursive(
    st.none() | st.integers() | st.text(alphabet="0123456789abcdefXYZ=", max_size=34) | st.booleans(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(log_keys, children, max_size=5),
    max_leaves=40,
)


@pytest.fixture
def client(start_ingest_server):
    server = start_ingest_server(max_body_bytes=256 * 1024)
    with httpx.Client(base_url=server.http_url, timeout=10) as c:
        yield server, c
    assert httpx.get(server.http_url + "/readyz").status_code == 200


def _post(c: httpx.Client, body: bytes, ctype: str, encoding: str | None) -> None:
    headers = {"content-type": ctype} if ctype else {}
    if encoding:
        headers["content-encoding"] = encoding
    r = c.post("/v1/logs", content=_encode(body, encoding), headers=headers)
    assert r.status_code in OK_CODES, (r.status_code, r.text[:300])


def test_random_bytes_and_json(client) -> None:
    _, c = client

    @FUZZ
    @given(body=st.binary(max_size=2000), ctype=CONTENT_TYPES, encoding=ENCODINGS)
    def raw(body: bytes, ctype: str, encoding: str | None) -> None:
        _post(c, body, ctype, encoding)

    @FUZZ
    @given(doc=json_values | st.fixed_dictionaries({"resourceLogs": logs_like}), encoding=ENCODINGS)
    def doc(doc, encoding: str | None) -> None:
        _post(c, json.dumps(doc).encode(), "application/json", encoding)

    raw()
    doc()


def test_mutated_valid_protobuf_over_http_and_grpc(client) -> None:
    server, c = client
    fuzz_mutated_protobuf(
        encode_logs(chat_with_events().logs).SerializeToString(), server.grpc_target,
        "/opentelemetry.proto.collector.logs.v1.LogsService/Export", lambda *a: _post(c, *a),
    )
    assert server.store.wait_loaded(20)
    assert server.store.stats().records_dead_lettered == 0  # what was accepted also loaded
