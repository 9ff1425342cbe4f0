"""Fixtures for normalizer tests: spans made by the real OTel SDK and encoded to real OTLP bytes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ingest.normalize import spans_table

SHARED = Path(__file__).resolve().parents[3].parent / "shared"


class SpanCapture:
    """A TracerProvider whose finished spans become an OTLP request, as an exporter would send."""

    def __init__(self, resource: dict[str, str] | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create(resource or {"service.name": "svc"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def tracer(self, name: str = "test-scope"):
        return self.provider.get_tracer(name)

    def request(self) -> ExportTraceServiceRequest:
        """Encode the finished spans and round-trip them through bytes, like the wire."""
        body = encode_spans(self.exporter.get_finished_spans()).SerializeToString()
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        return request

    def rows(self, project: str = "proj") -> list[dict]:
        return self.table(project).to_pylist()

    def table(self, project: str = "proj") -> pa.Table:
        return spans_table(project, self.request(), datetime.now(UTC))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """/work/shared beside the repo (design.md, fixtures); tests needing it skip if absent."""
    return SHARED


@pytest.fixture
def capture() -> Iterator[SpanCapture]:
    cap = SpanCapture()
    yield cap
    cap.provider.shutdown()
