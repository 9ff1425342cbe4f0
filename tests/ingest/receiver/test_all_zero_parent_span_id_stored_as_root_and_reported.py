"""A span whose parent_span_id is all zeros (an invalid span id; OTLP marks a root with an empty
one) is stored as the root it means, and the answer says so in partial_success as a warning:
rejected_spans 0 and a non-empty error_message (the OTLP spec's form for "accepted, but...").
Its children keep their parent; over protobuf, JSON and gRPC alike.

Before: the zeros were stored as a parent id no span has, so the trace had no root and no run,
and the client was not told."""

from __future__ import annotations

import os

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.ingest.api.harness import BACKENDS

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _request(trace_id: bytes) -> tuple[ExportTraceServiceRequest, bytes, bytes]:
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    root, child = os.urandom(8), os.urandom(8)
    t0 = 1_767_268_800_000_000_000
    ss.spans.add(trace_id=trace_id, span_id=root, parent_span_id=bytes(8), name="root",
                 kind=Span.SPAN_KIND_SERVER, start_time_unix_nano=t0, end_time_unix_nano=t0 + 10**9)
    ss.spans.add(trace_id=trace_id, span_id=child, parent_span_id=root, name="child",
                 start_time_unix_nano=t0 + 1, end_time_unix_nano=t0 + 10**8)
    return req, root, child


def _send(server, transport: str, req: ExportTraceServiceRequest, otlp_json) -> ExportTraceServiceResponse:
    if transport == "grpc":
        with grpc.insecure_channel(server.grpc_target) as channel:
            export = channel.unary_unary(
                EXPORT,
                request_serializer=ExportTraceServiceRequest.SerializeToString,
                response_deserializer=ExportTraceServiceResponse.FromString,
            )
            return export(req, timeout=10)
    if transport == "json":
        r = httpx.post(server.http_url + "/v1/traces", json=otlp_json(req))
        assert r.status_code == 200, r.text
        assert r.json()["partialSuccess"].get("rejectedSpans", "0") == "0"
        answer = ExportTraceServiceResponse()
        answer.partial_success.error_message = r.json()["partialSuccess"]["errorMessage"]
        return answer
    r = httpx.post(
        server.http_url + "/v1/traces", content=req.SerializeToString(), headers={"content-type": "application/x-protobuf"}
    )
    assert r.status_code == 200, r.text
    return ExportTraceServiceResponse.FromString(r.content)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("transport", ["protobuf", "json", "grpc"])
def test_all_zero_parent_becomes_a_root_reported_as_a_warning(start_ingest_server, otlp_json, transport) -> None:
    server = start_ingest_server()
    trace_id = os.urandom(16)
    req, root, child = _request(trace_id)
    answer = _send(server, transport, req, otlp_json)
    assert answer.partial_success.rejected_spans == 0
    assert "all-zero parent_span_id" in answer.partial_success.error_message

    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        rows = dict(cur.execute("SELECT span_id, parent_span_id FROM spans").fetchall())
    assert rows == {root.hex(): None, child.hex(): root.hex()}
    run = httpx.get(f"{server.http_url}/api/traces/{trace_id.hex()}").json()["run"]
    assert run["name"] == "root"  # the repaired root is the trace's run
    assert server.metrics.spans_repaired.labels(reason="zero_parent_span_id")._value.get() == 1


def test_valid_request_still_gets_no_partial_success(start_ingest_server, make_request) -> None:
    server = start_ingest_server()
    r = httpx.post(
        server.http_url + "/v1/traces",
        content=make_request(3).SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
    )
    assert r.status_code == 200
    assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
