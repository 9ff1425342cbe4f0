"""OTLP/gRPC `TraceService/Export` and `LogsService/Export`: the same decode -> validate -> store
path as HTTP.

Why grpc.aio in the HTTP server's event loop: `store.submit` is a coroutine that resolves when the
store's writer thread commits; running both transports in one loop means one submission path and
one shutdown order (stop accepting, drain in-flight calls, then flush the store).

Why `grpc.so_reuseport` is off: with it on (gRPC's default) a second server silently shares the
port with a running one instead of failing with "port in use".
"""

from __future__ import annotations

import asyncio
import logging

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ingest.auth import KeyRing, authorize, presented_key
from ingest.config import Settings
from ingest.errors import IngestError, Internal, Overloaded, PortInUse
from ingest.memory_bound import decoded_estimate
from ingest.metrics import IngestMetrics
from ingest.otlp.budget import InflightBudget, Reservation
from ingest.otlp.decode import parse_protobuf
from ingest.otlp.export import SpanSink, export_validated
from ingest.otlp.limits import AttributeLimits
from ingest.otlp.logs import export_logs, parse_logs_protobuf, validate_logs
from ingest.otlp.validate import ValidationResult, validate_request

log = logging.getLogger(__name__)

TRANSPORT = "grpc"


SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"


class TraceServiceHandler:
    """`TraceService/Export`. It takes the raw request bytes and decodes them itself, so that an
    undecodable message is INVALID_ARGUMENT (like HTTP's 400) rather than gRPC's generic INTERNAL
    "Exception deserializing request". Project and permission come from the call's metadata key."""

    service = SERVICE
    response_type: type[Message] = ExportTraceServiceResponse

    def __init__(
        self, store: SpanSink, metrics: IngestMetrics, keyring: KeyRing, limits: AttributeLimits | None = None,
        budget: InflightBudget | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.keyring = keyring
        self.limits = limits
        # the HTTP receiver's in-flight budget, shared: decoded requests count once, whatever the transport
        self.budget = budget

    def generic_handler(self) -> grpc.GenericRpcHandler:
        export = grpc.unary_unary_rpc_method_handler(
            self.export,
            request_deserializer=None,  # raw bytes
            response_serializer=self.response_type.SerializeToString,
        )
        return grpc.method_handlers_generic_handler(self.service, {"Export": export})

    async def export(self, body: bytes, context: grpc.aio.ServicerContext) -> Message:
        reservation = Reservation(self.budget) if self.budget is not None else None
        try:
            if reservation is not None:
                # gRPC has received the message already; what decoding it will hold is reserved first
                reservation.take(len(body) + decoded_estimate(len(body)))
            response = await self._export(body, context)
        except IngestError as exc:
            error = exc
        except Exception:
            log.exception("unexpected failure in gRPC Export")
            error = Internal("internal error; see the server log")
        else:
            self.metrics.requests.labels(transport=TRANSPORT, code=grpc.StatusCode.OK.name).inc()
            return response
        finally:
            if reservation is not None:
                reservation.release()
        code = error.mapping.grpc_code
        self.metrics.requests.labels(transport=TRANSPORT, code=code.name).inc()
        log.info("OTLP/gRPC export answered %s (%s): %s", code.name, error.reason, error.message)
        await context.abort(code, error.message, trailing_metadata=_error_metadata(error))
        raise AssertionError("unreachable: context.abort raises")  # pragma: no cover

    def _project(self, context: grpc.aio.ServicerContext) -> str:
        """The calling key's project, once it is known to hold the ingest scope."""
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        principal = self.keyring.authenticate(presented_key(metadata.get("authorization"), metadata.get("x-api-key")))
        authorize(principal, "ingest")
        return principal.project

    async def _export(self, body: bytes, context: grpc.aio.ServicerContext) -> Message:
        project = self._project(context)
        result = await asyncio.to_thread(_decode_and_validate, body, self.limits)
        return await export_validated(result, project, self.store, self.metrics)


class LogsServiceHandler(TraceServiceHandler):
    """`LogsService/Export`: the trace handler's auth, errors and metrics, logs' decode and store."""

    service = LOGS_SERVICE
    response_type = ExportLogsServiceResponse

    async def _export(self, body: bytes, context: grpc.aio.ServicerContext) -> Message:
        project = self._project(context)
        result = await asyncio.to_thread(lambda: validate_logs(parse_logs_protobuf(body)))
        if not result.rejections:
            result.payload = body
        return await export_logs(result, project, self.store, self.metrics)  # type: ignore[arg-type]


def _decode_and_validate(body: bytes, limits: AttributeLimits | None = None) -> ValidationResult:
    return validate_request(parse_protobuf(body), None, limits, len(body))


def _error_metadata(error: IngestError) -> tuple[tuple[str, bytes], ...]:
    """RetryInfo for retryable errors, both where the OTel exporters read it and in the standard
    `grpc-status-details-bin` rich status."""
    if not isinstance(error, Overloaded):
        return ()
    retry = RetryInfo(retry_delay=Duration(seconds=error.retry_after))
    detail = AnyProto()
    detail.Pack(retry)
    status = Status(code=error.mapping.grpc_code.value[0], message=error.message, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", retry.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


def grpc_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


async def start_grpc_server(
    settings: Settings, store: SpanSink, metrics: IngestMetrics, keyring: KeyRing, port: int,
    budget: InflightBudget | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Bind and start the gRPC receiver on `port` (0 = any free port); returns it and the bound port."""
    server = grpc.aio.server(
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", settings.max_body_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ]
    )
    server.add_generic_rpc_handlers(
        (
            TraceServiceHandler(store, metrics, keyring, settings.attribute_limits, budget).generic_handler(),
            LogsServiceHandler(store, metrics, keyring, None, budget).generic_handler(),
        )
    )
    address = grpc_address(settings.host, port)
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        await server.stop(None)
        raise PortInUse(
            f"gRPC port {port} on {settings.host} is in use (or cannot be bound); pass --grpc-port <free port>, "
            "or --grpc-port 0 to disable gRPC"
        )
    await server.start()
    return server, bound
