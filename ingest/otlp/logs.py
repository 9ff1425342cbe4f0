"""OTLP logs export (`POST /v1/logs`, `LogsService/Export`): decode -> validate -> store -> answer.

The same path as traces, shared by both transports: the body limits, decompression, error table
(ingest/errors.py) and `partial_success` rules are the traces' own. What differs is only what a
valid record is: a log record may have no trace context at all (it is still stored), but ids of
the wrong length cannot key it to a span and are rejected per record, the rest of the batch
going through. All-zero ids mean "no context", as the OTLP spec says.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from ingest.errors import IngestError, Internal, Malformed
from ingest.metrics import IngestMetrics
from ingest.otlp.budget import Reservation
from ingest.otlp.decode import BodyFormat, _convert, _items, decompress
from ingest.otlp.validate import SPAN_ID_BYTES, TRACE_ID_BYTES, Rejection, RejectReason, rejection_message

log = logging.getLogger(__name__)


class LogSink(Protocol):
    """What the receiver needs of the store for logs (ingest.store.SpanStore satisfies it)."""

    async def submit_logs(
        self, project: str, request: ExportLogsServiceRequest, payload: bytes | None = None
    ) -> None: ...


@dataclass
class LogsValidation:
    """The request holding only valid log records, how many, and the rejected ones."""

    request: ExportLogsServiceRequest
    accepted: int
    rejections: list[Rejection] = field(default_factory=list)
    payload: bytes | None = None  # the protobuf body as received, when nothing was removed

    @property
    def rejected(self) -> int:
        return len(self.rejections)


def record_problem(record: LogRecord) -> Rejection | None:
    """Why this record cannot be stored, or None when it can."""
    if len(record.trace_id) not in (0, TRACE_ID_BYTES):
        return Rejection(
            RejectReason.INVALID_TRACE_ID,
            f"trace_id must be empty or {TRACE_ID_BYTES} bytes, got {len(record.trace_id)}",
        )
    if len(record.span_id) not in (0, SPAN_ID_BYTES):
        return Rejection(
            RejectReason.INVALID_SPAN_ID, f"span_id must be empty or {SPAN_ID_BYTES} bytes, got {len(record.span_id)}"
        )
    return None


def validate_logs(request: ExportLogsServiceRequest, prior: list[Rejection] | None = None) -> LogsValidation:
    """Remove invalid records from `request` in place; only scope lists holding one are rebuilt."""
    rejections = list(prior or [])
    accepted = 0
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            problems = [record_problem(r) for r in sl.log_records]
            bad = [p for p in problems if p is not None]
            if not bad:
                accepted += len(problems)
                continue
            keep = []
            for record, problem in zip(sl.log_records, problems, strict=True):
                if problem is None:
                    copy = LogRecord()
                    copy.CopyFrom(record)
                    keep.append(copy)
            del sl.log_records[:]
            sl.log_records.extend(keep)
            accepted += len(keep)
            rejections.extend(bad)
    return LogsValidation(request, accepted, rejections)


def parse_logs_protobuf(data: bytes) -> ExportLogsServiceRequest:
    try:
        return ExportLogsServiceRequest.FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Malformed(f"body is not a valid ExportLogsServiceRequest protobuf: {exc}") from None


def parse_logs_json(data: bytes) -> tuple[ExportLogsServiceRequest, list[Rejection]]:
    """OTLP/JSON logs: hex ids (a record whose id is not hex is rejected), camelCase or snake_case."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"body is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise Malformed("OTLP/JSON body must be an object with a resourceLogs list")
    rejections = _hex_ids_to_base64(doc)
    request = ExportLogsServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise Malformed(f"body is not a valid OTLP/JSON ExportLogsServiceRequest: {str(exc)[:200]}") from None
    return request, rejections


_RECORD_IDS = ((("traceId", "trace_id"), RejectReason.INVALID_TRACE_ID), (("spanId", "span_id"), RejectReason.INVALID_SPAN_ID))


def _hex_ids_to_base64(doc: dict[str, Any]) -> list[Rejection]:
    rejections: list[Rejection] = []
    for rl in _items(doc, "resourceLogs", "resource_logs"):
        if not isinstance(rl, dict):
            continue
        for sl in _items(rl, "scopeLogs", "scope_logs"):
            if not isinstance(sl, dict):
                continue
            records = _items(sl, "logRecords", "log_records")
            kept = []
            for record in records:
                problem = _convert_ids(record) if isinstance(record, dict) else None
                if problem is None:
                    kept.append(record)
                else:
                    rejections.append(problem)
            records[:] = kept
    return rejections


def _convert_ids(record: dict[str, Any]) -> Rejection | None:
    for names, reason in _RECORD_IDS:
        for name in names:
            if name in record and not _convert(record, name):
                return Rejection(reason, f"{name} is not a hex string")
    return None


def decode_and_validate_logs(
    raw: bytes, fmt: BodyFormat, encoding: str | None, limit: int, reservation: Reservation | None = None
) -> LogsValidation:
    """The CPU-bound part of an HTTP logs export (run in a worker thread)."""
    data = decompress(raw, encoding, limit)
    if reservation is not None and data is not raw:
        reservation.take(len(data))
    if fmt is BodyFormat.PROTOBUF:
        result = validate_logs(parse_logs_protobuf(data))
        if not result.rejections:
            result.payload = data
        return result
    request, rejections = parse_logs_json(data)
    return validate_logs(request, rejections)


def logs_response(rejections: list[Rejection]) -> ExportLogsServiceResponse:
    """The success answer; `partial_success` only when records were rejected (per spec)."""
    response = ExportLogsServiceResponse()
    if rejections:
        response.partial_success.rejected_log_records = len(rejections)
        response.partial_success.error_message = rejection_message(rejections, noun="log record")
    return response


async def export_logs(
    result: LogsValidation, project: str, store: LogSink, metrics: IngestMetrics
) -> ExportLogsServiceResponse:
    """Submit the valid records for `project`; return once they are durable (Overloaded/Internal raise)."""
    metrics.logs_received.inc(result.accepted + result.rejected)
    for reason, n in Counter(r.reason for r in result.rejections).items():
        metrics.logs_rejected.labels(reason=reason.value).inc(n)
    if result.accepted:
        try:
            await store.submit_logs(project, result.request, result.payload)
        except IngestError as exc:
            metrics.logs_rejected.labels(reason=exc.reason).inc(result.accepted)
            raise
        except Exception as exc:
            log.exception("store.submit_logs failed for %d log records of project %r", result.accepted, project)
            metrics.logs_rejected.labels(reason=Internal.reason).inc(result.accepted)
            raise Internal("the store failed to accept the log records; see the server log") from exc
    return logs_response(result.rejections)
