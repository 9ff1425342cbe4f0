"""However records are sized, requests stay within the span and byte bounds, every span is sent
exactly once with its own resource and scope, and a server with a smaller body limit (413) gets
the batch in halves instead of losing it."""

from __future__ import annotations

import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ingest.importer import Batcher, split_batch
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.importer.collector_files import run_import, trace_spans, write_jsonl


def _big_request() -> ExportTraceServiceRequest:
    """2 resources x 2 scopes x 500 spans, attribute sizes varying from a few bytes to 3 KB."""
    req = ExportTraceServiceRequest()
    for r in range(2):
        rs = req.resource_spans.add(schema_url=f"schema-r{r}")
        rs.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value=f"svc-{r}")))
        for s in range(2):
            ss = rs.scope_spans.add(schema_url=f"schema-s{s}")
            ss.scope.name = f"scope-{r}-{s}"
            for i in range(500):
                span = ss.spans.add(trace_id=os.urandom(16), span_id=os.urandom(8), name=f"s{i}")
                span.attributes.append(KeyValue(key="pad", value=AnyValue(string_value="x" * (i * 7 % 3000))))
    return req


def _owners(req: ExportTraceServiceRequest) -> list[tuple[bytes, bytes, str, str, str]]:
    return [
        (span.span_id, rs.resource.SerializeToString(), rs.schema_url, ss.scope.name, ss.schema_url)
        for rs in req.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]


def test_batches_bounded_and_every_span_once_with_its_resource() -> None:
    big = _big_request()
    batcher = Batcher(max_bytes=64 * 1024, max_spans=150)
    batches = list(batcher.add(big, ("big.jsonl", 1)))
    batches.append(batcher.flush())
    assert batcher.flush() is None
    for batch in batches:
        assert 0 < batch.spans <= 150
        assert batch.request.ByteSize() <= 64 * 1024
        assert batch.spans == sum(len(ss.spans) for rs in batch.request.resource_spans for ss in rs.scope_spans)
        assert batch.where == "big.jsonl:1"
    assert [o for b in batches for o in _owners(b.request)] == _owners(big)


def test_small_records_are_packed_together_and_sources_named() -> None:
    batcher = Batcher(max_bytes=1 << 30, max_spans=1000)
    small = ExportTraceServiceRequest()
    small.resource_spans.add().scope_spans.add().spans.add(trace_id=os.urandom(16), span_id=os.urandom(8))
    out = [b for line in range(1, 11) for b in batcher.add(small, ("a.jsonl", line))]
    out += [b for b in batcher.add(small, ("b.bin", None))]
    assert out == []
    batch = batcher.flush()
    assert batch.spans == 11 and batch.where == "a.jsonl:1-10, b.bin"


def test_oversized_span_travels_alone_and_halves_split_evenly() -> None:
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i in range(5):
        span = ss.spans.add(trace_id=os.urandom(16), span_id=os.urandom(8))
        span.attributes.append(KeyValue(key="pad", value=AnyValue(string_value="y" * (10_000 if i == 2 else 10))))
    batcher = Batcher(max_bytes=2000, max_spans=100)
    batches = [*batcher.add(req), batcher.flush()]
    assert [b.spans for b in batches] == [2, 1, 2]
    halves = split_batch(batches[0])
    assert [h.spans for h in halves] == [1, 1]
    assert _owners(halves[0].request) + _owners(halves[1].request) == _owners(batches[0].request)


def test_one_huge_line_becomes_bounded_requests_all_stored(ingest_server, tmp_path) -> None:
    emitter = Emitter()
    trace_id = emitter.wide_trace(children=600)  # 1201 spans in one export request = one line
    path = write_jsonl(tmp_path / "huge.jsonl", [emitter.request()])
    summary, output = run_import(ingest_server.http_url, [path], max_batch_spans=100)
    assert summary.ok, output
    assert summary.records == 1 and summary.requests == 13 and summary.spans_accepted == 1201
    assert ingest_server.store.wait_loaded(10)
    assert len(trace_spans(ingest_server.http_url, trace_id)) == 1201


def test_server_body_limit_413_is_met_by_splitting(start_ingest_server, tmp_path) -> None:
    srv = start_ingest_server(max_body_bytes=20_000)
    emitter = Emitter()
    trace_id = emitter.wide_trace(children=300)  # 601 spans, ~75 KB of protobuf: 4+ requests
    path = write_jsonl(tmp_path / "wide.jsonl", [emitter.request()])
    summary, output = run_import(srv.http_url, [path], gzip=False)
    assert summary.ok, output
    assert "HTTP 413" in output and summary.requests >= 4 and summary.spans_accepted == 601
    assert srv.store.wait_loaded(10)
    assert len(trace_spans(srv.http_url, trace_id)) == 601
