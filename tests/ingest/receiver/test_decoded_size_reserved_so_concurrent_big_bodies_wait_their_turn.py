"""Four 60 MiB bodies decoded at once held ~4x their size each in parsed requests, far beyond the
in-flight budget. The budget now reserves the decoded form of a declared body before reading it:
while one big body is in flight a second is answered 503 + Retry-After at once (not decoded), and
stored in full when retried after the first is done; a lone big body is always admitted."""

from __future__ import annotations

import threading

import grpc
import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from ingest.config import Settings
from ingest.memory_bound import decoded_estimate, rss_bound_bytes
from tests.ingest.store.test_body_bigger_than_queue_stored_in_pieces_not_503_forever import minimal_spans

MIB = 1024 * 1024
PROTOBUF = {"content-type": "application/x-protobuf"}


def _second_body(n: int) -> bytes:
    request = minimal_spans(n)
    for s in request.resource_spans[0].scope_spans[0].spans:
        s.trace_id = b"\xff" + s.trace_id[1:]
    return request.SerializeToString()


def test_second_big_body_refused_while_first_decodes_then_stored(start_ingest_server) -> None:
    first = minimal_spans(25_000).SerializeToString()  # 3 pieces
    second = _second_body(25_000)
    # room for one body's decoded form, not two
    server = start_ingest_server(max_inflight_bytes=len(first) + decoded_estimate(len(first)) + MIB, queue_max_bytes=MIB)
    release = threading.Event()
    held = server.store.run_write(lambda conn: release.wait(30))  # the loader stops: pieces wait for room
    answers: dict[str, int] = {}

    def post_first() -> None:
        answers["first"] = httpx.post(server.http_url + "/v1/traces", content=first, headers=PROTOBUF, timeout=60).status_code

    sender = threading.Thread(target=post_first)
    sender.start()
    for _ in range(200):  # until the first holds its reservation (its second piece waits for room)
        if server.store.stats().requests_submitted >= 1:
            break
        threading.Event().wait(0.02)
    refused = httpx.post(server.http_url + "/v1/traces", content=second, headers=PROTOBUF, timeout=60)
    assert refused.status_code == 503 and refused.headers["retry-after"]
    # refused by the in-flight budget before its body was decoded, not later by the full queue
    assert "in flight" in Status.FromString(refused.content).message
    release.set()
    held.result(30)
    sender.join(60)
    assert answers["first"] == 200
    assert server.store.wait_loaded(60)  # the queue has room again: the exporter's retry goes in
    retried = httpx.post(server.http_url + "/v1/traces", content=second, headers=PROTOBUF, timeout=60)
    assert retried.status_code == 200
    assert server.store.wait_loaded(60)
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchall()[0][0] == 50_000


def test_documented_bound_grows_with_every_budget() -> None:
    base = rss_bound_bytes(Settings())
    assert rss_bound_bytes(Settings(queue_max_bytes=512 * MIB)) == base + 256 * MIB
    assert rss_bound_bytes(Settings(duckdb_memory_limit="1GB")) > base
    assert rss_bound_bytes(Settings(normalize_processes=4)) > base


def test_grpc_shares_the_budget_second_big_message_unavailable_while_first_in_flight(start_ingest_server) -> None:
    first = minimal_spans(25_000).SerializeToString()
    second = ExportTraceServiceRequest.FromString(_second_body(25_000))
    server = start_ingest_server(max_inflight_bytes=len(first) + decoded_estimate(len(first)) + MIB, queue_max_bytes=MIB)
    release = threading.Event()
    held = server.store.run_write(lambda conn: release.wait(30))
    answers: dict[str, int] = {}

    def post_first() -> None:  # over HTTP: both transports draw on one budget
        answers["first"] = httpx.post(server.http_url + "/v1/traces", content=first, headers=PROTOBUF, timeout=60).status_code

    sender = threading.Thread(target=post_first)
    sender.start()
    for _ in range(200):
        if server.store.stats().requests_submitted >= 1:
            break
        threading.Event().wait(0.02)
    with grpc.insecure_channel(server.grpc_target, options=[("grpc.max_send_message_length", 64 * MIB)]) as channel:
        stub = TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(second, timeout=60)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE and "in flight" in info.value.details()
        release.set()
        held.result(30)
        sender.join(60)
        assert answers["first"] == 200 and server.store.wait_loaded(60)
        stub.Export(second, timeout=60)
    assert server.store.wait_loaded(60)
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchall()[0][0] == 50_000
