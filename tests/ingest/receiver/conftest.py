"""Receiver test helpers: OTLP request builders, exposed as fixtures (importlib mode has no
sibling-module imports)."""

from __future__ import annotations

import base64
import os
import struct
import zlib
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


def build_gzip_bomb(total_mib: int = 1024) -> bytes:
    """A valid gzip stream of `total_mib` MiB of zeros (~1 KiB per MiB), built without ever holding
    or deflating the whole: after a full flush, deflating the same 1 MiB block yields the same bytes,
    so the body is header + first block + the repeated block + an empty final block + trailer."""
    block = bytes(1024 * 1024)
    comp = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    repeated = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(total_mib):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    final_empty_block = b"\x03\x00"
    trailer = struct.pack("<II", crc, (total_mib * len(block)) & 0xFFFFFFFF)
    return header + first + repeated * (total_mib - 1) + final_empty_block + trailer


@pytest.fixture(scope="session")
def gzip_bomb() -> bytes:
    """1 GiB of zeros, gzip-compressed to about 1 MiB."""
    return build_gzip_bomb(1024)


@pytest.fixture
def gzip_bomb_builder() -> Callable[[int], bytes]:
    return build_gzip_bomb
