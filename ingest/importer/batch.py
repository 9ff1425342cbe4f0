"""Re-packing spans from records of any size into requests of bounded size.

Why re-batch rather than send each record as it is: one Collector line can hold a huge batch (over
the server's body limit) and a JSON-lines file can hold a million tiny ones (a request each would
be slow); bounded requests make both fast and keep memory flat.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# Bytes a span adds around itself inside the request (field tag + length varint), and a resource or
# scope wrapper: counted generously so that a batch's real size never passes `max_bytes`.
_SPAN_OVERHEAD = 8
_WRAPPER_OVERHEAD = 24



@dataclass
class Batch:
    """One request to send, with the records its spans came from (for messages)."""

    request: ExportTraceServiceRequest
    spans: int
    sources: list[tuple[str, int | None]]

    @property
    def where(self) -> str:
        return describe_sources(self.sources)


def describe_sources(sources: Sequence[tuple[str, int | None]]) -> str:
    """`a.jsonl:1-40, b.bin` from [(a.jsonl, 1), ..., (a.jsonl, 40), (b.bin, None)]."""
    parts: list[str] = []
    runs: list[list[Any]] = []  # [path, first, last]
    for path, index in sources:
        last = runs[-1] if runs else None
        if last and last[0] == path and index is not None and last[2] is not None and index == last[2] + 1:
            last[2] = index
        else:
            runs.append([path, index, index])
    for path, lo, hi in runs:
        parts.append(path if lo is None else f"{path}:{lo}" if lo == hi else f"{path}:{lo}-{hi}")
    return ", ".join(parts)


class Batcher:
    """Re-packs the spans of any number of requests into requests of at most `max_spans` spans and
    `max_bytes` serialized bytes (a single span larger than that travels alone).

    Spans keep their resource and scope (copied into each request that carries some of their spans);
    consecutive spans of one resource/scope share one wrapper, so nothing is duplicated needlessly.
    """

    def __init__(self, max_bytes: int, max_spans: int) -> None:
        self.max_bytes = max(1, max_bytes)
        self.max_spans = max(1, max_spans)
        self._serial = 0
        self._reset()

    def _reset(self) -> None:
        self._request = ExportTraceServiceRequest()
        self._bytes = 0
        self._spans = 0
        self._rs_key = self._ss_key = -1
        self._rs: Any = None
        self._ss: Any = None
        self._sources: list[tuple[str, int | None]] = []

    def add(self, request: ExportTraceServiceRequest, source: tuple[str, int | None] = ("", None)) -> Iterator[Batch]:
        """Take in `request`; yield every batch that became full on the way."""
        for rs in request.resource_spans:
            self._serial += 1
            rs_key = self._serial
            for ss in rs.scope_spans:
                self._serial += 1
                ss_key = self._serial
                for span in ss.spans:
                    size = span.ByteSize() + _SPAN_OVERHEAD
                    if self._spans and (self._spans >= self.max_spans or self._bytes + size > self.max_bytes):
                        yield self._take()
                    if self._rs_key != rs_key:
                        self._rs = self._request.resource_spans.add()
                        self._rs.resource.CopyFrom(rs.resource)
                        self._rs.schema_url = rs.schema_url
                        self._rs_key, self._ss_key = rs_key, -1
                        self._bytes += rs.resource.ByteSize() + len(rs.schema_url) + _WRAPPER_OVERHEAD
                    if self._ss_key != ss_key:
                        self._ss = self._rs.scope_spans.add()
                        self._ss.scope.CopyFrom(ss.scope)
                        self._ss.schema_url = ss.schema_url
                        self._ss_key = ss_key
                        self._bytes += ss.scope.ByteSize() + len(ss.schema_url) + _WRAPPER_OVERHEAD
                    self._ss.spans.append(span)
                    self._spans += 1
                    self._bytes += size
                    if not self._sources or self._sources[-1] != source:
                        self._sources.append(source)

    @property
    def pending_spans(self) -> int:
        """Spans taken in but not yet handed out in a batch."""
        return self._spans

    def flush(self) -> Batch | None:
        """The last, partly filled batch (None when empty)."""
        return self._take() if self._spans else None

    def _take(self) -> Batch:
        batch = Batch(self._request, self._spans, self._sources)
        self._reset()
        return batch


def split_batch(batch: Batch) -> list[Batch]:
    """Two halves of `batch` (for a 413 from a server with a smaller body limit)."""
    batcher = Batcher(max_bytes=1 << 62, max_spans=(batch.spans + 1) // 2)
    halves = list(batcher.add(batch.request))
    if (rest := batcher.flush()) is not None:
        halves.append(rest)
    for half in halves:
        half.sources = batch.sources
    return halves

