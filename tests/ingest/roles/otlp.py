"""A small real OTLP/protobuf export request for the role tests."""

from __future__ import annotations

import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTOBUF = {"content-type": "application/x-protobuf"}


def one_trace(n_spans: int = 3, age_days: float = 0.0) -> tuple[bytes, str]:
    """(body, trace id hex): a root span and children, ending `age_days` ago (0: now, so every time
    window holds them)."""
    import time

    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    tid, root = os.urandom(16), os.urandom(8)
    now = time.time_ns() - int(age_days * 86400 * 1e9)
    for i in range(n_spans):
        ss.spans.add(trace_id=tid, span_id=root if i == 0 else os.urandom(8), parent_span_id=b"" if i == 0 else root,
                     name=f"span {i}", start_time_unix_nano=now - 2_000_000_000 + i, end_time_unix_nano=now + i)
    return req.SerializeToString(), tid.hex()
