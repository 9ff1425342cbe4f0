"""The one export path both transports share: validate -> count -> store.submit -> answer.

Why counting lives here: `steplens_spans_received` / `steplens_spans_rejected` must mean the same
thing for HTTP and gRPC, and an overloaded store must show up as rejected spans (never silently).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ingest.errors import IngestError, Internal
from ingest.metrics import IngestMetrics
from ingest.otlp.respond import export_response
from ingest.otlp.validate import ValidationResult

log = logging.getLogger(__name__)


class SpanSink(Protocol):
    """What the receiver needs of the store (ingest.store.SpanStore satisfies it)."""

    def ready(self) -> bool: ...

    async def submit(
        self, project: str, request: ExportTraceServiceRequest, payload: bytes | None = None
    ) -> None: ...


async def export_validated(
    result: ValidationResult, project: str, store: SpanSink, metrics: IngestMetrics
) -> ExportTraceServiceResponse:
    """Submit the valid spans of `result` for `project`; return once they are durable.

    Raises Overloaded (from the store) and Internal for any other store failure.
    """
    metrics.spans_received.inc(result.accepted + result.rejected)
    for reason, n in Counter(r.reason for r in result.rejections).items():
        metrics.spans_rejected.labels(reason=reason.value).inc(n)
    if result.values_truncated:
        metrics.values_truncated.inc(result.values_truncated)
    if result.attributes_dropped:
        metrics.attributes_dropped.inc(result.attributes_dropped)
    if result.events_dropped:
        metrics.events_dropped.inc(result.events_dropped)
    if result.zero_parents:
        metrics.spans_repaired.labels(reason="zero_parent_span_id").inc(result.zero_parents)
    if result.accepted:
        try:
            await store.submit(project, result.request, result.payload)
        except IngestError as exc:
            metrics.spans_rejected.labels(reason=exc.reason).inc(result.accepted)
            raise
        except Exception as exc:
            log.exception("store.submit failed for %d spans of project %r", result.accepted, project)
            metrics.spans_rejected.labels(reason=Internal.reason).inc(result.accepted)
            raise Internal("the store failed to accept the spans; see the server log") from exc
    return export_response(result.rejections, result.warnings)

