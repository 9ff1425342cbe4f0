"""The official OpenTelemetry Python OTLP exporters (HTTP protobuf and gRPC, plain and gzip) must get
SUCCESS from the receiver and their spans must land in the store under the key's project."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS

KEY = "exporter-key-0123456789abcdef"


def _spans(n: int = 3):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("steplens-tests")
    with tracer.start_as_current_span("invoke_agent demo") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        for i in range(n - 1):
            with tracer.start_as_current_span(f"step {i}"):
                pass
    provider.shutdown()
    spans = memory.get_finished_spans()
    return spans, format(spans[0].context.trace_id, "032x")


def _stored_projects(server, trace_hex: str) -> list[str]:
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        return [r[0] for r in cur.execute("SELECT project FROM spans WHERE trace_id = ?", [trace_hex]).fetchall()]


@pytest.fixture(params=BACKENDS)
def keyed_server(start_ingest_server, request):
    """The same receiver over each storage backend."""
    return start_ingest_server(
        api_keys=[ApiKey(key=KEY, project="exporters", scopes=["ingest", "read"])], store=request.param
    )


@pytest.mark.parametrize("compression", [HttpCompression.NoCompression, HttpCompression.Gzip, HttpCompression.Deflate])
def test_http_exporter_gets_success(keyed_server, compression) -> None:
    spans, trace_hex = _spans()
    exporter = HttpExporter(
        endpoint=keyed_server.http_url + "/v1/traces",
        headers={"authorization": f"Bearer {KEY}"},
        compression=compression,
        timeout=10,
    )
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert _stored_projects(keyed_server, trace_hex) == ["exporters"] * 3


@pytest.mark.parametrize("gzip", [False, True])
def test_grpc_exporter_gets_success(keyed_server, gzip: bool) -> None:
    from grpc import Compression

    spans, trace_hex = _spans()
    exporter = GrpcExporter(
        endpoint=keyed_server.grpc_target,
        insecure=True,
        headers={"x-api-key": KEY},
        compression=Compression.Gzip if gzip else Compression.NoCompression,
        timeout=10,
    )
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert _stored_projects(keyed_server, trace_hex) == ["exporters"] * 3


def test_exporters_without_a_key_fail_instead_of_succeeding(keyed_server) -> None:
    spans, trace_hex = _spans(1)
    http = HttpExporter(endpoint=keyed_server.http_url + "/v1/traces", timeout=5)
    grpc_exp = GrpcExporter(endpoint=keyed_server.grpc_target, insecure=True, timeout=5)
    try:
        assert http.export(spans) is SpanExportResult.FAILURE
        assert grpc_exp.export(spans) is SpanExportResult.FAILURE
    finally:
        http.shutdown()
        grpc_exp.shutdown()
    assert _stored_projects(keyed_server, trace_hex) == []
