"""`LogsService/Export` and `POST /v1/logs` fail the way the traces endpoints do: UNAUTHENTICATED /
PERMISSION_DENIED for keys, INVALID_ARGUMENT for an undecodable message, RESOURCE_EXHAUSTED when too
large, UNAVAILABLE + RetryInfo (HTTP 503 + Retry-After) when the store is full, and bad record ids
in partial_success, with the rest stored under the key's project."""

from __future__ import annotations

import grpc
import httpx
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub

from ingest.config import ApiKey
from tests.support.genai_logs import chat_with_events, encode_logs

KEY = "grpc-logs-key-0123456789abcdef"
READ_KEY = "grpc-logs-read-key-0123456789"


@pytest.fixture
def stub_for(start_ingest_server):
    channels: list[grpc.Channel] = []

    def make(**overrides):
        server = start_ingest_server(**overrides)
        channel = grpc.insecure_channel(server.grpc_target)
        channels.append(channel)
        return server, LogsServiceStub(channel)

    yield make
    for channel in channels:
        channel.close()


def _error(call, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def test_keys_decide_access_and_project(stub_for) -> None:
    server, stub = stub_for(
        api_keys=[ApiKey(key=KEY, project="g", scopes=["ingest"]), ApiKey(key=READ_KEY, project="g", scopes=["read"])]
    )
    chat = chat_with_events()
    req = encode_logs(chat.logs)
    assert _error(stub.Export, req, timeout=5).code() is grpc.StatusCode.UNAUTHENTICATED
    denied = _error(stub.Export, req, metadata=[("x-api-key", READ_KEY)], timeout=5)
    assert denied.code() is grpc.StatusCode.PERMISSION_DENIED
    assert not stub.Export(req, metadata=[("authorization", f"Bearer {KEY}")], timeout=5).HasField("partial_success")
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        stored = cur.execute("SELECT DISTINCT project FROM log_records WHERE trace_id = ?", [chat.trace_hex]).fetchall()
    assert stored == [("g",)]


def test_bad_ids_come_back_in_partial_success_rest_stored(stub_for) -> None:
    server, stub = stub_for()
    chat = chat_with_events()
    req = encode_logs(chat.logs)
    records = req.resource_logs[0].scope_logs[0].log_records
    records[0].trace_id = b"short"
    records[3].span_id = b"\x01\x02"
    response = stub.Export(req, timeout=5)
    assert response.partial_success.rejected_log_records == 2
    assert "trace_id" in response.partial_success.error_message
    assert "span_id" in response.partial_success.error_message
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM log_records").fetchone()[0] == 2
    rejected = server.metrics.logs_rejected.labels(reason="invalid_trace_id")._value.get()
    assert rejected == 1


def test_overload_is_unavailable_with_retry_info_and_503_over_http(stub_for) -> None:
    server, stub = stub_for(queue_max_bytes=10, retry_after_s=4)
    req = encode_logs(chat_with_events().logs)
    err = _error(stub.Export, req, timeout=5)
    assert err.code() is grpc.StatusCode.UNAVAILABLE
    assert RetryInfo.FromString(dict(err.trailing_metadata())["google.rpc.retryinfo-bin"]).retry_delay.seconds == 4
    answer = httpx.post(server.http_url + "/v1/logs", content=req.SerializeToString(),
                        headers={"content-type": "application/x-protobuf"}, timeout=5)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "4"
    records = len(req.resource_logs[0].scope_logs[0].log_records)
    assert server.metrics.logs_rejected.labels(reason="overloaded")._value.get() == 2 * records


def test_too_large_and_undecodable(stub_for) -> None:
    server, stub = stub_for(max_body_bytes=2000)
    big = encode_logs(chat_with_events().logs)
    big.resource_logs[0].scope_logs[0].log_records[0].body.string_value = "x" * 5000
    err = _error(stub.Export, big, timeout=5)
    assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "google.rpc.retryinfo-bin" not in dict(err.trailing_metadata() or ())
    with grpc.insecure_channel(server.grpc_target) as channel:
        export_raw = channel.unary_unary(
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export", request_serializer=None,
            response_deserializer=None,
        )
        bad = _error(export_raw, b"\xff\xff\xff\xff", timeout=5)
    assert bad.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "ExportLogsServiceRequest" in bad.details()
