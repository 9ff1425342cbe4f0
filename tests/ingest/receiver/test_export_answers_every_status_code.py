"""Each way an export can go wrong gets its own status over real HTTP, in the request's encoding:
200 (+ data really stored), partial_success, 400 with a reason, 401, 403, 413 (raw and inflated),
415, 503 + Retry-After, and the Langfuse SDK's path."""

from __future__ import annotations

import gzip
import json
import time
import zlib

import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ingest.config import ApiKey

PB = {"content-type": "application/x-protobuf"}
JS = {"content-type": "application/json"}
MIB = 1024 * 1024


def _stored(server, trace_id: bytes) -> list[tuple[str, str]]:
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        return cur.execute(
            "SELECT project, name FROM spans WHERE trace_id = ? ORDER BY name", [trace_id.hex()]
        ).fetchall()


def test_protobuf_export_is_stored_and_answered_in_protobuf(ingest_server, make_request) -> None:
    req = make_request(3)
    tid = req.resource_spans[0].scope_spans[0].spans[0].trace_id
    r = httpx.post(ingest_server.http_url + "/v1/traces", content=req.SerializeToString(), headers=PB)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
    assert _stored(ingest_server, tid) == [("default", "span 0"), ("default", "span 1"), ("default", "span 2")]


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_json_export_compressed_is_stored_and_answered_in_json(ingest_server, make_request, otlp_json, coding) -> None:
    req = make_request(2)
    tid = req.resource_spans[0].scope_spans[0].spans[0].trace_id
    raw = json.dumps(otlp_json(req)).encode()
    body = gzip.compress(raw) if coding == "gzip" else zlib.compress(raw)
    r = httpx.post(
        ingest_server.http_url + "/v1/traces", content=body, headers={**JS, "content-encoding": coding}
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json" and r.json() == {}
    assert len(_stored(ingest_server, tid)) == 2


def test_langfuse_sdk_path_is_accepted(ingest_server, make_request) -> None:
    req = make_request(1)
    tid = req.resource_spans[0].scope_spans[0].spans[0].trace_id
    r = httpx.post(ingest_server.http_url + "/api/public/otel/v1/traces", content=req.SerializeToString(), headers=PB)
    assert r.status_code == 200
    assert len(_stored(ingest_server, tid)) == 1


def test_invalid_spans_come_back_in_partial_success_and_the_rest_is_stored(ingest_server, make_request) -> None:
    req = make_request(4)
    spans = req.resource_spans[0].scope_spans[0].spans
    tid = spans[0].trace_id
    spans[2].span_id = b"\x01\x02"
    r = httpx.post(ingest_server.http_url + "/v1/traces", content=req.SerializeToString(), headers=PB)
    assert r.status_code == 200
    ps = ExportTraceServiceResponse.FromString(r.content).partial_success
    assert ps.rejected_spans == 1 and "span_id" in ps.error_message
    assert [n for _, n in _stored(ingest_server, tid)] == ["span 0", "span 1", "span 3"]
    metrics = httpx.get(ingest_server.http_url + "/metrics").text
    assert 'steplens_spans_rejected_total{reason="invalid_span_id"} 1.0' in metrics
    assert "steplens_spans_received_total 4.0" in metrics
    # the stored spans' trace got its analytics pass before wait_loaded returned, and it is counted
    assert "steplens_upkeep_traces_total 1.0" in metrics and "steplens_upkeep_seconds_count 1.0" in metrics


def test_undecodable_body_is_400_with_reason_as_status_in_request_encoding(ingest_server) -> None:
    r = httpx.post(ingest_server.http_url + "/v1/traces", content=b"\xff\xff\xff", headers=PB)
    assert r.status_code == 400
    status = Status.FromString(r.content)
    assert status.code == 3 and "protobuf" in status.message
    r = httpx.post(ingest_server.http_url + "/v1/traces", content=b"{nope", headers=JS)
    assert r.status_code == 400 and "JSON" in r.json()["message"]
    r = httpx.post(
        ingest_server.http_url + "/v1/traces", content=b"not gzip", headers={**PB, "content-encoding": "gzip"}
    )
    assert r.status_code == 400 and "gzip" in Status.FromString(r.content).message


@pytest.mark.parametrize(
    "headers", [{"content-type": "text/plain"}, {}, {**PB, "content-encoding": "br"}]
)
def test_unsupported_media_is_415(ingest_server, headers) -> None:
    r = httpx.post(ingest_server.http_url + "/v1/traces", content=b"x", headers=headers)
    assert r.status_code == 415


def test_gzip_bomb_is_413_quickly(ingest_server, gzip_bomb) -> None:
    bomb = gzip_bomb  # 1 GiB of zeros in ~1 MiB
    t0 = time.monotonic()
    r = httpx.post(
        ingest_server.http_url + "/v1/traces", content=bomb, headers={**PB, "content-encoding": "gzip"}, timeout=30
    )
    assert r.status_code == 413
    assert time.monotonic() - t0 < 10
    assert "limit" in Status.FromString(r.content).message


def test_raw_body_over_limit_is_413_streamed_or_declared(start_ingest_server) -> None:
    server = start_ingest_server(max_body_bytes=1000)
    r = httpx.post(server.http_url + "/v1/traces", content=b"\x00" * 5000, headers=PB)
    assert r.status_code == 413

    def chunks():  # no Content-Length: the receiver must count while streaming
        for _ in range(5):
            yield b"\x00" * 1000

    r = httpx.post(server.http_url + "/v1/traces", content=chunks(), headers=PB)
    assert r.status_code == 413


def test_full_queue_is_503_with_retry_after_and_counted(start_ingest_server, make_request) -> None:
    server = start_ingest_server(queue_max_bytes=10, retry_after_s=3)
    r = httpx.post(server.http_url + "/v1/traces", content=make_request(2).SerializeToString(), headers=PB)
    assert r.status_code == 503
    assert r.headers["retry-after"] == "3"
    assert Status.FromString(r.content).code == 14
    metrics = httpx.get(server.http_url + "/metrics").text
    assert 'steplens_spans_rejected_total{reason="overloaded"} 2.0' in metrics
    assert 'steplens_export_requests_total{code="503",transport="http"} 1.0' in metrics


def test_keys_decide_401_403_and_the_project(start_ingest_server, make_request, monkeypatch) -> None:
    monkeypatch.setenv("TEST_INGEST_KEY", "ingest-key-0123456789")
    server = start_ingest_server(
        api_keys=[
            ApiKey(key_env="TEST_INGEST_KEY", project="alpha", scopes=["ingest"]),
            ApiKey(key="read-key-0123456789", project="alpha", scopes=["read"]),
            ApiKey(key="admin-key-0123456789", project="alpha", scopes=["admin"]),
            ApiKey(key="oper-key-0123456789", project="ops", scopes=["operator"]),
        ]
    )
    url = server.http_url + "/v1/traces"
    req = make_request(1)
    tid = req.resource_spans[0].scope_spans[0].spans[0].trace_id
    req.resource_spans[0].resource.attributes.add(key="steplens.project").value.string_value = "evil"
    body = req.SerializeToString()

    assert httpx.post(url, content=body, headers=PB).status_code == 401
    r = httpx.post(url, content=body, headers={**PB, "authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert httpx.post(url, content=body, headers={**PB, "x-api-key": "read-key-0123456789"}).status_code == 403
    r = httpx.post(url, content=body, headers={**PB, "authorization": "Bearer ingest-key-0123456789"})
    assert r.status_code == 200
    assert _stored(server, tid) == [("alpha", "span 0")]  # the key's project, not the payload's

    assert httpx.get(server.http_url + "/healthz").status_code == 200
    assert httpx.get(server.http_url + "/readyz").status_code == 401
    assert httpx.get(server.http_url + "/metrics").status_code == 401
    assert httpx.get(server.http_url + "/metrics", headers={"x-api-key": "ingest-key-0123456789"}).status_code == 403
    # /metrics counts every project's spans: an operator endpoint, not a project's read
    for key in ("read-key-0123456789", "admin-key-0123456789"):
        assert httpx.get(server.http_url + "/metrics", headers={"x-api-key": key}).status_code == 403
    assert httpx.get(server.http_url + "/metrics", headers={"x-api-key": "oper-key-0123456789"}).status_code == 200
    assert httpx.get(server.http_url + "/api/runs").status_code == 401
    assert httpx.get(server.http_url + "/nowhere").status_code == 401


def test_health_and_readiness_without_keys(ingest_server) -> None:
    assert httpx.get(ingest_server.http_url + "/healthz").json() == {"status": "ok", "role": "all"}
    # the one-process server runs the singleton jobs: the built-in alert rules and the queue filler
    assert httpx.get(ingest_server.http_url + "/readyz").json() == {
        "status": "ready", "role": "all", "jobs": ["alerts", "queue_fill"]}
    text = httpx.get(ingest_server.http_url + "/metrics").text
    assert "steplens_spans_received_total" in text
