"""Per-span validity: which spans of a decoded request can be stored, and why the others cannot.

Why reject per span rather than per request: OTLP's `partial_success` exists so that one broken
span (say, a 3-byte trace id from a buggy client) does not cost the whole batch. Only what the
store cannot key on is rejected (ids); odd timings such as end-before-start are kept and left to
the normalizer, because dropping a real (if clock-skewed) span would hide it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
_MAX_MESSAGE = 1000  # characters of partial_success.error_message


class RejectReason(StrEnum):
    """Why one span was rejected; also the `reason` label of `steplens_spans_rejected`."""

    INVALID_TRACE_ID = "invalid_trace_id"
    INVALID_SPAN_ID = "invalid_span_id"
    INVALID_PARENT_SPAN_ID = "invalid_parent_span_id"
    INVALID_LINK = "invalid_link"


@dataclass(frozen=True)
class Rejection:
    """One rejected span: a closed reason (for metrics) and a human detail (for the client)."""

    reason: RejectReason
    detail: str


@dataclass
class ValidationResult:
    """The request holding only valid spans, how many that is, and the rejected ones."""

    request: ExportTraceServiceRequest
    accepted: int
    rejections: list[Rejection] = field(default_factory=list)
    # The request's protobuf bytes when the body was protobuf and nothing was removed: the store
    # spools and normalizes these instead of serializing the request again.
    payload: bytes | None = None

    @property
    def rejected(self) -> int:
        return len(self.rejections)


def span_problem(span: Span) -> Rejection | None:
    """Why this span cannot be stored, or None when it can."""
    tid, sid, pid = span.trace_id, span.span_id, span.parent_span_id
    if len(tid) != TRACE_ID_BYTES:
        return Rejection(RejectReason.INVALID_TRACE_ID, f"trace_id must be {TRACE_ID_BYTES} bytes, got {len(tid)}")
    if not any(tid):
        return Rejection(RejectReason.INVALID_TRACE_ID, "trace_id is all zeros")
    if len(sid) != SPAN_ID_BYTES:
        return Rejection(RejectReason.INVALID_SPAN_ID, f"span_id must be {SPAN_ID_BYTES} bytes, got {len(sid)}")
    if not any(sid):
        return Rejection(RejectReason.INVALID_SPAN_ID, "span_id is all zeros")
    if len(pid) not in (0, SPAN_ID_BYTES):
        return Rejection(
            RejectReason.INVALID_PARENT_SPAN_ID,
            f"parent_span_id must be empty or {SPAN_ID_BYTES} bytes, got {len(pid)}",
        )
    return None


def validate_request(
    request: ExportTraceServiceRequest, prior: list[Rejection] | None = None
) -> ValidationResult:
    """Remove invalid spans from `request` (in place) and report them after `prior` rejections.

    The common all-valid case touches nothing; only scope lists holding a bad span are rebuilt.
    """
    rejections = list(prior or [])
    accepted = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            problems = [span_problem(s) for s in ss.spans]
            bad = [p for p in problems if p is not None]
            if not bad:
                accepted += len(problems)
                continue
            # Copy the keepers out before clearing: the repeated field owns its elements.
            copies = []
            for span, problem in zip(ss.spans, problems, strict=True):
                if problem is None:
                    copy = Span()
                    copy.CopyFrom(span)
                    copies.append(copy)
            del ss.spans[:]
            ss.spans.extend(copies)
            accepted += len(copies)
            rejections.extend(bad)
    return ValidationResult(request, accepted, rejections)


def rejection_message(rejections: list[Rejection], noun: str = "span") -> str:
    """One bounded line for partial_success.error_message: counts per reason plus an example each."""
    if not rejections:
        return ""
    counts = Counter(r.reason for r in rejections)
    examples: dict[RejectReason, str] = {}
    for r in rejections:
        examples.setdefault(r.reason, r.detail)
    parts = [f"{counts[reason]} x {reason.value} (e.g. {examples[reason]})" for reason in counts]
    text = f"rejected {len(rejections)} {noun}(s): " + "; ".join(parts)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."
