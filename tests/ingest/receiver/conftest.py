"""Receiver test helpers: OTLP request builders, exposed as fixtures (importlib mode has no
sibling-module imports)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def sample_request(n_spans: int = 3, trace_id: bytes | None = None) -> ExportTraceServiceRequest:
    """One trace of `n_spans`: a root and children, with a few attributes of each value kind."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="svc")))
    ss = rs.scope_spans.add()
    ss.scope.name = "tests"
    tid = trace_id or os.urandom(16)
    root = os.urandom(8)
    for i in range(n_spans):
        span = ss.spans.add(
            trace_id=tid,
            span_id=root if i == 0 else os.urandom(8),
            parent_span_id=b"" if i == 0 else root,
            name=f"span {i}",
            kind=Span.SPAN_KIND_INTERNAL if i == 0 else Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=1_700_000_000_000_000_000 + i,
            end_time_unix_nano=1_700_000_001_000_000_000 + i,
        )
        span.attributes.append(KeyValue(key="i", value=AnyValue(int_value=i)))
        span.attributes.append(KeyValue(key="b", value=AnyValue(bytes_value=b"\x00\xff")))
        span.status.code = 2 if i == 1 else 0
    return req


def to_otlp_json(req: ExportTraceServiceRequest) -> dict:
    """OTLP/JSON as the spec writes it: camelCase, hex ids, int64 as strings, integer enums."""
    doc = json_format.MessageToDict(req, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return doc


@pytest.fixture
def make_request() -> Callable[..., ExportTraceServiceRequest]:
    return sample_request


@pytest.fixture
def otlp_json() -> Callable[[ExportTraceServiceRequest], dict]:
    return to_otlp_json
