"""A valid body whose normalized size is more than the whole ingest queue was answered 503 forever
(its table counted against `queue_max_bytes` as one record). It is stored in full, in pieces, over
HTTP through the real server; and the pieces never hold more than about the queue limit at once."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from ingest.store.split import PIECE_SPANS, pieces
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import T0, ns

MIB = 1024 * 1024
SPANS = 45_000  # 5 pieces


def minimal_spans(n: int, traces: int = 300) -> ExportTraceServiceRequest:
    ss = ScopeSpans()
    t = ns(T0)
    for i in range(n):
        s = ss.spans.add()
        s.trace_id = (1 + i % traces).to_bytes(16, "big")
        s.span_id = (1 + i).to_bytes(8, "big")
        s.name = "s"
        s.start_time_unix_nano = t + i * 1000
        s.end_time_unix_nano = t + i * 1000 + 500
        s.kind = Span.SPAN_KIND_INTERNAL
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ss])])


@pytest.mark.parametrize("backend", BACKENDS)
def test_body_bigger_than_queue_stored_in_full_not_503(start_ingest_server) -> None:
    server = start_ingest_server(queue_max_bytes=2 * MIB)
    body = minimal_spans(SPANS).SerializeToString()
    response = httpx.post(
        server.http_url + "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}, timeout=120
    )
    assert response.status_code == 200, response.text
    assert server.store.wait_loaded(120)
    with server.store.read() as cur:
        total, distinct = cur.execute("SELECT count(*), count(DISTINCT span_id) FROM spans").fetchall()[0]
        runs, span_sum = cur.execute("SELECT count(*), sum(span_count) FROM runs").fetchall()[0]
    assert (total, distinct) == (SPANS, SPANS)
    assert (runs, span_sum) == (300, SPANS)  # traces split across pieces merge into one run each
    assert server.store.stats().queue_bytes == 0

    # the same body again: all duplicates, still 200, nothing stored twice
    again = httpx.post(
        server.http_url + "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}, timeout=120
    )
    assert again.status_code == 200
    assert server.store.wait_loaded(120)
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchall()[0][0] == SPANS


def test_pieces_keep_every_span_in_order_with_its_resource() -> None:
    request = minimal_spans(25_000)
    request.resource_spans[0].resource.attributes.add(key="service.name").value.string_value = "svc"
    parts = list(pieces(request))
    assert [sum(len(ss.spans) for rs in p.resource_spans for ss in rs.scope_spans) for p in parts] == [
        PIECE_SPANS, PIECE_SPANS, 5_000,
    ]
    ids = [s.span_id for p in parts for rs in p.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert ids == [s.span_id for s in request.resource_spans[0].scope_spans[0].spans]
    assert all(rs.resource.attributes[0].value.string_value == "svc" for p in parts for rs in p.resource_spans)
    heavy = pieces(request, max_spans=100_000, max_bytes=100_000)
    assert all(p.ByteSize() < 110_000 for p in heavy)  # span framing on top of the spans themselves
