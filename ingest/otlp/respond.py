"""Encode OTLP answers in the request's own encoding, as the OTLP/HTTP spec asks.

Success is an `ExportTraceServiceResponse` (with `partial_success` when spans were rejected);
failure is a `google.rpc.Status` whose `code` is the gRPC code of the same error, so a client
sees the same reason on either transport.
"""

from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ingest.errors import IngestError
from ingest.otlp.decode import BodyFormat
from ingest.otlp.validate import Rejection, bounded_message, rejection_message


def export_response(rejections: list[Rejection], warnings: list[str] | None = None) -> ExportTraceServiceResponse:
    """The success answer; `partial_success` is set only when something was rejected, or stored
    but changed (`warnings`): then, as the OTLP spec asks of a warning, `rejected_spans` is 0 and
    `error_message` says what was changed."""
    response = ExportTraceServiceResponse()
    parts = [rejection_message(rejections)] if rejections else []
    parts += warnings or []
    if parts:
        response.partial_success.rejected_spans = len(rejections)
        response.partial_success.error_message = bounded_message("; ".join(parts))
    return response


def error_status(error: IngestError) -> Status:
    return Status(code=error.mapping.grpc_code.value[0], message=error.message)


def encode(message: Message, fmt: BodyFormat) -> bytes:
    if fmt is BodyFormat.PROTOBUF:
        return message.SerializeToString()
    return json_format.MessageToJson(message, indent=None).encode("utf-8")
