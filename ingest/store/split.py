"""Splitting a large export request into bounded pieces for normalization, the spool and the loader.

Why: a body under `max_body_bytes` (64 MiB) can hold 1.2M minimal spans, whose normalized Arrow
table is several times the body and more than the whole `queue_max_bytes`. Handled as one record
it could never be queued (an eternal 503) and its normalization alone took gigabytes in one worker.
In pieces of PIECE_SPANS spans, each piece is normalized, spooled and loaded on its own, the queue
limit applies per piece (a piece waits for room while the loader drains the ones before it), and
what normalization holds at once is one piece per worker. The client's 200 still means the whole
request: it is answered only once every piece is durable. If a later piece is refused (overload,
disk full), the client gets the 503 and retries the whole request; dedup stores the pieces that
were already durable once.
"""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# ~0.5 MiB of minimal spans, ~10-20 MiB of normalized table for rich agent spans: big enough that a
# piece is a cheap unit of work, small enough that a worker's normalization stays in tens of MiB.
PIECE_SPANS = 10_000
# ...and at most this many protobuf bytes of spans (so a piece of heavy spans stays small too; one
# span larger than this is a piece of its own).
PIECE_BYTES = 8 * 1024 * 1024


def count_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def needs_split(request: ExportTraceServiceRequest, payload: bytes | None = None) -> bool:
    """True when `request` is larger than one piece (by spans, or by bytes)."""
    if count_spans(request) > PIECE_SPANS:
        return True
    return (len(payload) if payload is not None else request.ByteSize()) > PIECE_BYTES


def pieces(
    request: ExportTraceServiceRequest, max_spans: int = PIECE_SPANS, max_bytes: int = PIECE_BYTES
) -> Iterator[ExportTraceServiceRequest]:
    """`request` in order, as requests of at most `max_spans` spans and about `max_bytes` each; every
    piece keeps the resource, scope and schema URLs of its spans. Built one at a time, so only one
    copy of a piece is held."""
    max_spans = max(1, max_spans)
    piece = ExportTraceServiceRequest()
    n = size = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            start = 0
            spans = ss.spans
            while start < len(spans):
                take = 0
                room = min(max_spans - n, len(spans) - start)
                while take < room:
                    size += spans[start + take].ByteSize()
                    take += 1
                    if size >= max_bytes:
                        break
                p_rs = piece.resource_spans.add()
                p_rs.resource.CopyFrom(rs.resource)
                p_rs.schema_url = rs.schema_url
                p_ss = p_rs.scope_spans.add()
                p_ss.scope.CopyFrom(ss.scope)
                p_ss.schema_url = ss.schema_url
                p_ss.spans.extend(ss.spans[start : start + take])
                n += take
                start += take
                if n >= max_spans or size >= max_bytes:
                    yield piece
                    piece, n, size = ExportTraceServiceRequest(), 0, 0
    if n:
        yield piece
