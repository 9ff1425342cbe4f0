"""Over gRPC the same failures must carry the OTLP status codes: UNAUTHENTICATED, PERMISSION_DENIED,
UNAVAILABLE + RetryInfo when overloaded, RESOURCE_EXHAUSTED when too large, partial_success for
invalid spans."""

from __future__ import annotations

import grpc
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from ingest.config import ApiKey

KEY = "grpc-key-0123456789abcdef"
READ_KEY = "grpc-read-key-0123456789"


@pytest.fixture
def stub_for(start_ingest_server):
    channels: list[grpc.Channel] = []

    def make(**overrides):
        server = start_ingest_server(**overrides)
        channel = grpc.insecure_channel(server.grpc_target)
        channels.append(channel)
        return server, TraceServiceStub(channel)

    yield make
    for channel in channels:
        channel.close()


def _code(call, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def test_keys_map_to_unauthenticated_and_permission_denied(stub_for, make_request) -> None:
    server, stub = stub_for(
        api_keys=[ApiKey(key=KEY, project="g", scopes=["ingest"]), ApiKey(key=READ_KEY, project="g", scopes=["read"])]
    )
    req = make_request(2)
    assert _code(stub.Export, req, timeout=5).code() is grpc.StatusCode.UNAUTHENTICATED
    err = _code(stub.Export, req, metadata=[("authorization", "Bearer nope")], timeout=5)
    assert err.code() is grpc.StatusCode.UNAUTHENTICATED and "nope" not in err.details()
    assert _code(stub.Export, req, metadata=[("x-api-key", READ_KEY)], timeout=5).code() is grpc.StatusCode.PERMISSION_DENIED
    assert not stub.Export(req, metadata=[("authorization", f"Bearer {KEY}")], timeout=5).HasField("partial_success")


def test_invalid_spans_come_back_in_partial_success(stub_for, make_request) -> None:
    server, stub = stub_for()
    req = make_request(3)
    req.resource_spans[0].scope_spans[0].spans[1].trace_id = b"short"
    response = stub.Export(req, timeout=5)
    assert response.partial_success.rejected_spans == 1
    assert "trace_id" in response.partial_success.error_message


def test_overload_is_unavailable_with_retry_info(stub_for, make_request) -> None:
    server, stub = stub_for(queue_max_bytes=10, retry_after_s=4)
    err = _code(stub.Export, make_request(2), timeout=5)
    assert err.code() is grpc.StatusCode.UNAVAILABLE
    trailers = dict(err.trailing_metadata())
    assert RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds == 4


def test_too_large_is_resource_exhausted_without_retry_info(stub_for, make_request) -> None:
    server, stub = stub_for(max_body_bytes=2000)
    err = _code(stub.Export, make_request(60), timeout=5)
    assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "google.rpc.retryinfo-bin" not in dict(err.trailing_metadata() or ())


def test_undecodable_message_is_invalid_argument(start_ingest_server) -> None:
    server = start_ingest_server()
    with grpc.insecure_channel(server.grpc_target) as channel:
        export_raw = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None,
            response_deserializer=None,
        )
        err = _code(export_raw, b"\xff\xff\xff\xff", timeout=5)
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT and "protobuf" in err.details()
