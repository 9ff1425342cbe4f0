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
from ingest.otlp.validate import Rejection, rejection_message


def export_response(rejections: list[Rejection]) -> ExportTraceServiceResponse:
    """The success answer; `partial_success` is set only when something was rejected (per spec)."""
    response = ExportTraceServiceResponse()
    if rejections:
        response.partial_success.rejected_spans = len(rejections)
        response.partial_success.error_message = rejection_message(rejections)
    return response


def error_status(error: IngestError) -> Status:
    return Status(code=error.mapping.grpc_code.value[0], message=error.message)


def encode(message: Message, fmt: BodyFormat) -> bytes:
    if fmt is BodyFormat.PROTOBUF:
        return message.SerializeToString()
    return json_format.MessageToJson(message, indent=None).encode("utf-8")
