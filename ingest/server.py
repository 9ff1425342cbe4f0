"""The ingest server process: FastAPI on uvicorn (OTLP/HTTP, health, query API) plus OTLP/gRPC.

Why sockets are bound before anything starts: a taken port must be a clear one-line error
("port 4318 is in use; pass --port ...") before the store opens the database, not a uvicorn
traceback after it. Why uvicorn's signal re-raise is disabled: after SIGINT/SIGTERM the gRPC
server must still drain and the store must still flush; re-raising KeyboardInterrupt inside
the loop would skip that.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import threading
from collections.abc import Generator, Sequence
from pathlib import Path

import uvicorn
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from ingest.auth import KeyRing, Principal, RequireKeyMiddleware, check_bind_policy, require_scope
from ingest.body_timeout import BodyReadTimeout
from ingest.config import Settings, load_settings
from ingest.errors import (
    ConfigError,
    IngestError,
    Internal,
    Malformed,
    Overloaded,
    PortInUse,
    TooLarge,
    Unauthenticated,
    UnsupportedMediaType,
)
from ingest.health import health_router
from ingest.memory_bound import decoded_estimate
from ingest.metrics import IngestMetrics
from ingest.otlp.budget import InflightBudget, Reservation
from ingest.otlp.decode import (
    DEFAULT_MAX_GZIP_MEMBERS,
    BodyFormat,
    body_format,
    decompress,
    parse_json,
    parse_protobuf,
)
from ingest.otlp.export import SpanSink, export_validated
from ingest.otlp.limits import AttributeLimits
from ingest.otlp.logs import decode_and_validate_logs, export_logs
from ingest.otlp.respond import encode, error_status
from ingest.otlp.validate import ValidationResult, validate_request
from ingest.roles import add_refusals, check_role_store, plan_for

log = logging.getLogger(__name__)

# `/v1/traces` is the OTLP default; the others are what some SDKs append to their base URL
# (Langfuse: `<host>/api/public/otel`).
OTLP_TRACES_PATHS: tuple[str, ...] = ("/v1/traces", "/api/public/otel/v1/traces")
OTLP_LOGS_PATHS: tuple[str, ...] = ("/v1/logs",)
_SUPPORTED_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "identity"})


# ---------------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------------


def create_app(
    settings: Settings,
    store: SpanSink,
    metrics: IngestMetrics,
    routers: Sequence[tuple[str, APIRouter]] = (),
    keyring: KeyRing | None = None,
) -> FastAPI:
    """The HTTP app. `routers` are (prefix, router) pairs mounted as-is, e.g. ("/api", query_router);
    more can be added later with `app.include_router` (the auth middleware covers them too).

    `app.state` holds settings, store, metrics and keyring (what `require_scope` reads).
    """
    keyring = keyring or KeyRing.from_settings(settings)
    plan = plan_for(settings.role)  # which routes this node serves (ingest/roles.py)
    budget = InflightBudget(settings.max_inflight_bytes, settings.retry_after_s)
    app = FastAPI(title="steplens ingest", version="0.1.0")
    app.state.settings = settings
    app.state.store = store
    app.state.metrics = metrics
    app.state.keyring = keyring
    app.state.budget = budget

    def render_error(request: Request, exc: IngestError) -> Response:
        status = exc.mapping.http_status
        headers: dict[str, str] = {}
        if isinstance(exc, Overloaded):
            headers["Retry-After"] = str(exc.retry_after)
        if isinstance(exc, Unauthenticated):
            headers["WWW-Authenticate"] = 'Bearer realm="steplens"'
        if request.url.path not in OTLP_TRACES_PATHS and request.url.path not in OTLP_LOGS_PATHS:
            return JSONResponse({"error": {"reason": exc.reason, "message": exc.message}}, status, headers)
        metrics.requests.labels(transport="http", code=str(status)).inc()
        log.info("OTLP/HTTP export answered %d (%s): %s", status, exc.reason, exc.message)
        try:
            fmt = body_format(request.headers.get("content-type"))
        except UnsupportedMediaType:
            fmt = BodyFormat.JSON
        return Response(encode(error_status(exc), fmt), status, headers, media_type=fmt.value)

    async def on_ingest_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, IngestError)
        return render_error(request, exc)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        # Starlette re-raises after this handler, so uvicorn logs the traceback: not silent.
        return render_error(request, Internal("internal error; see the server log"))

    app.add_exception_handler(IngestError, on_ingest_error)
    app.add_exception_handler(Exception, on_unexpected)
    if keyring.enabled:
        app.add_middleware(RequireKeyMiddleware, keyring=keyring, render_error=render_error)
    # Outermost but for Starlette's own: a slow body is cut off whatever the route (ingest/body_timeout.py).
    app.add_middleware(
        BodyReadTimeout, timeout_s=settings.body_read_timeout_s, on_timeout=metrics.body_read_timeouts.inc
    )

    async def export_traces(request: Request, principal: Principal = Depends(require_scope("ingest"))) -> Response:
        fmt = body_format(request.headers.get("content-type"))
        encoding = request.headers.get("content-encoding")
        _check_codings(encoding)
        reservation = Reservation(budget)
        try:
            # what decoding will hold, reserved before the body is read (ingest/memory_bound.py): a
            # burst of large bodies is refused at once instead of all being decoded together
            declared = request.headers.get("content-length", "").strip()
            estimated = 0
            if declared.isdigit() and int(declared) <= settings.max_body_bytes:
                estimated = decoded_estimate(int(declared))
                reservation.take(estimated)
            raw = await _read_body(request, settings.max_body_bytes, reservation)
            result = await asyncio.to_thread(
                _decode_and_validate, raw, fmt, encoding, settings.max_body_bytes, reservation, estimated,
                settings.attribute_limits, settings.max_gzip_members,
            )
            del raw
            response = await export_validated(result, principal.project, store, metrics)
        finally:
            reservation.release()
        metrics.requests.labels(transport="http", code="200").inc()
        return Response(encode(response, fmt), media_type=fmt.value)

    for path in OTLP_TRACES_PATHS if plan.otlp else ():
        app.add_api_route(path, export_traces, methods=["POST"], include_in_schema=path == "/v1/traces")

    async def export_log_records(
        request: Request, principal: Principal = Depends(require_scope("ingest"))
    ) -> Response:
        """OTLP logs: the traces' limits, codings, auth and answers (ingest/otlp/logs.py)."""
        fmt = body_format(request.headers.get("content-type"))
        encoding = request.headers.get("content-encoding")
        _check_codings(encoding)
        reservation = Reservation(budget)
        try:
            raw = await _read_body(request, settings.max_body_bytes, reservation)
            result = await asyncio.to_thread(
                decode_and_validate_logs, raw, fmt, encoding, settings.max_body_bytes, reservation,
                settings.max_gzip_members,
            )
            del raw
            response = await export_logs(result, principal.project, store, metrics)  # type: ignore[arg-type]
        finally:
            reservation.release()
        metrics.requests.labels(transport="http", code="200").inc()
        return Response(encode(response, fmt), media_type=fmt.value)

    for path in OTLP_LOGS_PATHS if plan.otlp else ():
        app.add_api_route(path, export_log_records, methods=["POST"])
    app.include_router(health_router(store, metrics, plan.role))
    for prefix, router in routers:
        app.include_router(router, prefix=prefix)
    add_refusals(app, plan, OTLP_TRACES_PATHS + OTLP_LOGS_PATHS)
    return app


def _check_codings(content_encoding: str | None) -> None:
    """Refuse an unknown Content-Encoding before reading the body (415)."""
    for coding in (content_encoding or "").split(","):
        coding = coding.strip().lower()
        if coding and coding not in _SUPPORTED_CODINGS:
            raise UnsupportedMediaType(f"Content-Encoding {coding!r} not supported; use gzip, deflate or identity")


async def _read_body(request: Request, limit: int, reservation: Reservation) -> bytes:
    """Read at most `limit` bytes, streaming: a huge body is refused without being buffered."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise TooLarge(f"body of {int(declared)} bytes is over the {limit} byte limit")
    body = bytearray()
    try:
        async for chunk in request.stream():
            if len(body) + len(chunk) > limit:
                raise TooLarge(f"body is over the {limit} byte limit")
            reservation.take(len(chunk))
            body += chunk
    except ClientDisconnect:
        raise Malformed("client disconnected before sending the whole body") from None
    return bytes(body)


def _decode_and_validate(
    raw: bytes,
    fmt: BodyFormat,
    encoding: str | None,
    limit: int,
    reservation: Reservation,
    estimated: int = 0,
    limits: AttributeLimits | None = None,
    max_gzip_members: int = DEFAULT_MAX_GZIP_MEMBERS,
) -> ValidationResult:
    """CPU-bound part of an export, run in a worker thread so the event loop keeps serving.
    `estimated`: the decoded size already reserved from the declared length."""
    data = decompress(raw, encoding, limit, max_gzip_members)
    # the decompressed bytes, and whatever of their decoded form the declared length did not cover
    extra = (len(data) if data is not raw else 0) + decoded_estimate(len(data)) - estimated
    if extra > 0:
        reservation.take(extra)
    if fmt is BodyFormat.PROTOBUF:
        result = validate_request(parse_protobuf(data), None, limits, len(data))
        if not result.rejections and not result.changed:
            result.payload = data
        return result
    decoded = parse_json(data)
    return validate_request(decoded.request, decoded.rejections, limits, len(data))


# ---------------------------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------------------------


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or PortInUse / ConfigError with what to do about it."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot resolve host {host!r}: {exc.strerror}; pass --host 127.0.0.1") from None
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the socket's
    # `proto` says TCP, and a socket made with proto 0 says 0. Without it every small response on a
    # kept-alive connection waited ~40 ms for Nagle + the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} is in use on {host}; pass --port <free port> or stop the other process") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """Graceful stop on SIGINT/SIGTERM, without re-raising them afterwards (see module doc)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


class ServerStack:
    """HTTP + gRPC receivers around an already started store, in one event loop.

    `ephemeral_ports=True` binds both on free ports (tests); gRPC stays off when
    `settings.grpc_port == 0`. The bound ports are known right after construction (HTTP) and
    once `started` is set (gRPC).
    """

    def __init__(
        self,
        settings: Settings,
        store: SpanSink,
        metrics: IngestMetrics,
        routers: Sequence[tuple[str, APIRouter]] = (),
        *,
        ephemeral_ports: bool = False,
        log_level: str = "info",
    ) -> None:
        check_bind_policy(settings)
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.keyring = KeyRing.from_settings(settings)
        self.app = create_app(settings, store, metrics, routers, self.keyring)
        self._ephemeral = ephemeral_ports
        self.http_socket = bind_tcp(settings.host, 0 if ephemeral_ports else settings.port)
        self.http_port: int = self.http_socket.getsockname()[1]
        self.app.state.http_url = self.http_url  # where in-process clients (judge runs) export to
        self.grpc_port: int | None = None
        self.started = threading.Event()
        config = uvicorn.Config(self.app, log_level=log_level, access_log=False, timeout_graceful_shutdown=10)
        self._uvicorn = _Uvicorn(config)

    @property
    def http_url(self) -> str:
        host = self.settings.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.http_port}"

    async def serve(self) -> None:
        """Run until `request_stop()` or SIGINT/SIGTERM; in-flight exports finish first."""
        from ingest.grpc_server import start_grpc_server

        grpc_server = None
        try:
            if self.settings.grpc_port and plan_for(self.settings.role).otlp:
                port = 0 if self._ephemeral else self.settings.grpc_port
                grpc_server, self.grpc_port = await start_grpc_server(
                    self.settings, self.store, self.metrics, self.keyring, port, budget=self.app.state.budget
                )
            http_task = asyncio.create_task(self._uvicorn.serve(sockets=[self.http_socket]))
            while not self._uvicorn.started and not http_task.done():
                await asyncio.sleep(0.01)
            if self._uvicorn.started:
                self.started.set()
                log.info("steplens ingest listening: HTTP %s, gRPC port %s", self.http_url, self.grpc_port or "off")
            await http_task
        finally:
            if grpc_server is not None:
                await grpc_server.stop(grace=5)
            self.http_socket.close()

    def request_stop(self) -> None:
        """Thread-safe: ask the server to stop (uvicorn polls the flag)."""
        self._uvicorn.should_exit = True


def serve(
    host: str | None = None,
    port: int | None = None,
    grpc_port: int | None = None,
    db: Path | None = None,
    config: Path | None = None,
    store: str | None = None,
    clickhouse_url: str | None = None,
    role: str | None = None,
) -> None:
    """Run the server (or the part of it `role` names, ingest/roles.py) until SIGINT/SIGTERM, then
    flush the store.

    Raises ConfigError (PortInUse included) with a message saying what to change; `ingest.cli.serve`
    turns that into a one-line error and exit code 2.
    """
    from ingest.jobs import store_settings
    from ingest.memory import tune_process_memory
    from ingest.store.backend import open_store

    tune_process_memory()
    settings = load_settings(
        config, host=host, port=port, grpc_port=grpc_port, db=db, store=store, clickhouse_url=clickhouse_url,
        role=role,
    )
    logging.getLogger("ingest").setLevel(settings.log_level.upper())
    check_role_store(settings.role, settings.store)
    metrics = IngestMetrics()
    span_store = open_store(store_settings(settings), metrics)  # no retention sweep on ingest/api nodes
    routers = node_routers(settings, span_store)
    stack = ServerStack(settings, span_store, metrics, routers)  # binds HTTP: fails fast on a taken port
    try:
        span_store.start()
        try:
            asyncio.run(stack.serve())
        finally:
            span_store.stop()
    finally:
        stack.http_socket.close()


def node_routers(settings: Settings, store: object) -> list[tuple[str, APIRouter]]:
    """What a node of `settings.role` mounts besides OTLP and health (ingest/roles.py)."""
    from ingest.jobs import build_jobs, jobs_router

    plan = plan_for(settings.role)
    if plan.query_api:
        return query_routers(settings, store, run_jobs=plan.jobs)
    if plan.jobs:
        return [("", jobs_router(build_jobs(settings, store), run=True))]
    return []


def query_routers(settings: Settings, store: object, run_jobs: bool = True) -> list[tuple[str, APIRouter]]:
    """The read-only query API under /api (owned by ingest.api), as `serve` mounts it, with the
    singleton jobs (ingest/jobs.py) started by its lifespan unless `run_jobs` is false."""
    from ingest.api import build_query_router
    from ingest.api.alerts import build_alerts_router
    from ingest.api.approvals import build_approvals_router
    from ingest.api.datasets import build_datasets_router
    from ingest.api.evaluators import build_evaluators_router
    from ingest.api.export import build_export_router
    from ingest.api.queues import build_queues_router
    from ingest.api.regressions import build_regressions_router
    from ingest.api.scores import build_scores_router
    from ingest.api.sql import build_sql_router
    from ingest.api.views import build_views_router
    from ingest.jobs import build_jobs, jobs_router

    jobs = build_jobs(settings, store)  # the singleton jobs (ingest/jobs.py), started by jobs_router below
    if getattr(store, "name", "duckdb") != "duckdb":
        # a store other than DuckDB: its query namespace (ingest/store/backend.py), scores and the
        # services whose SQL it has (ingest/store/work.py, ingest/store/clickhouse/queries/)
        from ingest.api.not_available import build_not_available_router

        return [
            ("/api", build_query_router(store, timeout_s=settings.query_timeout_s)),  # type: ignore[arg-type]
            ("/api", build_scores_router(store, timeout_s=settings.query_timeout_s)),
            ("/api", build_sql_router(store, settings)),  # the checked query rendered in its SQL
            ("/api", build_views_router(store, timeout_s=settings.query_timeout_s)),
            ("/api", build_regressions_router(store, timeout_s=settings.query_timeout_s)),  # type: ignore[arg-type]
            *([("/api", build_alerts_router(jobs.alerts, store, timeout_s=settings.query_timeout_s,  # type: ignore[arg-type]
                                            run_service=False))] if jobs.alerts is not None else []),
            ("/api", build_queues_router(store, jobs.queue_filler, timeout_s=settings.query_timeout_s,  # type: ignore[arg-type]
                                         run_filler=False)),
            ("/api", build_evaluators_router(jobs.evaluators, store, timeout_s=settings.query_timeout_s,  # type: ignore[arg-type]
                                             run_service=False)),
            ("/api", build_datasets_router(store, timeout_s=settings.query_timeout_s)),
            ("/api", build_approvals_router(store, timeout_s=settings.query_timeout_s)),
            ("/api", build_export_router(store, timeout_s=settings.query_timeout_s, page_rows=settings.export_page_rows)),
            ("/api", build_not_available_router(getattr(store, "name", "this"))),
            ("", jobs_router(jobs, run=run_jobs)),
        ]
    # The jobs router's lifespan runs the alert evaluator, queue filler and evaluators while the
    # HTTP server is up; the routers only read their rules and state.
    alerts, filler, evaluators = jobs.alerts, jobs.queue_filler, jobs.evaluators
    assert alerts is not None and filler is not None and evaluators is not None  # built on DuckDB
    return [
        ("/api", build_query_router(store, timeout_s=settings.query_timeout_s)),  # type: ignore[arg-type]
        ("/api", build_regressions_router(store, timeout_s=settings.query_timeout_s)),  # type: ignore[arg-type]
        ("/api", build_alerts_router(alerts, store, timeout_s=settings.query_timeout_s,  # type: ignore[arg-type]
                                     run_service=False)),
        ("/api", build_approvals_router(store, timeout_s=settings.query_timeout_s)),
        ("/api", build_sql_router(store, settings)),
        ("/api", build_scores_router(store, timeout_s=settings.query_timeout_s)),
        ("/api", build_export_router(store, timeout_s=settings.query_timeout_s, page_rows=settings.export_page_rows)),
        ("/api", build_views_router(store, timeout_s=settings.query_timeout_s)),
        ("/api", build_queues_router(store, filler, timeout_s=settings.query_timeout_s, run_filler=False)),
        ("/api", build_datasets_router(store, timeout_s=settings.query_timeout_s)),
        ("/api", build_evaluators_router(evaluators, store, timeout_s=settings.query_timeout_s,
                                         run_service=False)),
        ("", jobs_router(jobs, run=run_jobs)),
    ]
