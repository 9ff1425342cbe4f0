"""`tracer.setup()`: one call from nothing to spans leaving the process safely.

We keep our own `TracerProvider` instead of relying on the global one: OpenTelemetry allows the
global provider to be set once per process, and tests, the demo and embedding applications all
need to configure tracing more than once. `install_global=True` additionally installs it as the
global provider (once per process; later requests are refused with a warning).

Calling `setup()` while a handle is active returns THAT handle, unchanged (a warning names the
arguments that differ): two exporters never run side by side. To change the configuration, call
`handle.shutdown()` and then `setup()` again.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracer import _state
from tracer.config import content_policy
from tracer.content import ContentPolicy
from tracer.conventions import DEPLOYMENT_ENVIRONMENT_NAME, SERVICE_NAME, SERVICE_VERSION
from tracer.export import CountingExporter, ExportCounters, ExportStats, GatedProcessor, bounded
from tracer.genai_metrics import GenAIMetrics
from tracer.redact import Redactor

_log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
DEFAULT_SERVICE_NAME = "steplens-agent"
ENDPOINT_CONSOLE = "console"
ENDPOINT_MEMORY = "memory"
DEFAULT_MAX_QUEUE_SIZE = 2048
DEFAULT_SHUTDOWN_TIMEOUT_S = 5.0

_ENV_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
_ENV_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"

_lock = threading.Lock()
_active: TracingHandle | None = None
_global_installed = False


@dataclass(frozen=True)
class TracingConfig:
    """The arguments a handle was built from (compared when `setup()` is called again)."""

    service_name: str | None
    service_version: str | None = None
    environment: str | None = None
    endpoint: str | None = None
    headers: Mapping[str, str] | None = None
    capture_content: bool | None = None
    content_max_bytes: int | None = None
    export_timeout_s: float | None = None
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE
    schedule_delay_ms: float | None = None
    shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S
    install_global: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # redact hook, exporter, meter provider


class TracingHandle:
    """A configured tracing pipeline. Obtain with `tracer.setup()`."""

    def __init__(
        self,
        config: TracingConfig,
        provider: TracerProvider,
        counters: ExportCounters,
        policy: ContentPolicy,
        memory_exporter: InMemorySpanExporter | None,
        exporter: SpanExporter,
    ) -> None:
        self.config = config
        self.provider = provider
        self.policy = policy
        self.memory_exporter = memory_exporter
        self.exporter = exporter  # the unwrapped exporter (OTLP, console, memory or the caller's)
        self.tracer = provider.get_tracer(_state.INSTRUMENTATION_NAME, _state.INSTRUMENTATION_VERSION)
        self._counters = counters
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def active(self) -> bool:
        return not self._closed

    def stats(self) -> ExportStats:
        """Exported / failed / dropped / pending span counts, and the last export error."""
        return self._counters.snapshot()

    def force_flush(self, timeout_s: float = 5.0) -> bool:
        """Export everything queued; True when done within `timeout_s` (never blocks longer)."""
        if self._closed:
            return False
        return bounded(lambda: self.provider.force_flush(int(timeout_s * 1000)), timeout_s, "force_flush")

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Flush what can be flushed within `timeout_s`, then stop; True on a clean finish.

        Spans still queued when the time is up are counted as dropped in `stats()`. Idempotent.
        """
        global _active
        with self._close_lock:
            if self._closed:
                return True
            self._closed = True
        timeout = self.config.shutdown_timeout_s if timeout_s is None else timeout_s
        with _lock:
            if _active is self:
                _active = None
                _state.deactivate()
        self._counters.deadline = time.monotonic() + timeout
        clean = bounded(self.provider.shutdown, timeout + 0.25, "shutdown")
        self._counters.close()
        atexit.unregister(self._atexit)
        return clean

    def _atexit(self) -> None:
        self.shutdown()


def _build_exporter(config: TracingConfig, exporter: SpanExporter | None) -> SpanExporter:
    if exporter is not None:
        return exporter
    if config.endpoint == ENDPOINT_CONSOLE:
        return ConsoleSpanExporter()
    if config.endpoint == ENDPOINT_MEMORY:
        return InMemorySpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    endpoint = config.endpoint
    if endpoint is None and not (os.environ.get(_ENV_TRACES_ENDPOINT) or os.environ.get(_ENV_ENDPOINT)):
        endpoint = DEFAULT_ENDPOINT
    # endpoint None here means: let the exporter apply the standard OTEL_EXPORTER_OTLP_* rules.
    return OTLPSpanExporter(
        endpoint=endpoint,
        headers=dict(config.headers) if config.headers else None,
        timeout=config.export_timeout_s,
    )


def _build(config: TracingConfig, redact: Redactor | None, exporter: SpanExporter | None,
           meter_provider: MeterProvider | None, default_redaction: bool) -> TracingHandle:
    attrs: dict[str, str] = {}
    if config.service_name:
        attrs[SERVICE_NAME] = config.service_name
    if config.service_version:
        attrs[SERVICE_VERSION] = config.service_version
    if config.environment:
        attrs[DEPLOYMENT_ENVIRONMENT_NAME] = config.environment
    # Resource.create also merges OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME; our explicit
    # values win. Without a name from either, the SDK says "unknown_service": use ours instead.
    resource = Resource.create(attrs)
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)

    raw = _build_exporter(config, exporter)
    counters = ExportCounters(capacity=config.max_queue_size)
    counting = CountingExporter(raw, counters)
    inner: SpanProcessor
    if config.endpoint == ENDPOINT_MEMORY and exporter is None:
        inner = SimpleSpanProcessor(counting)  # synchronous: tests assert right after a span ends
    else:
        inner = BatchSpanProcessor(
            counting,
            max_queue_size=config.max_queue_size,
            max_export_batch_size=min(512, config.max_queue_size),
            schedule_delay_millis=config.schedule_delay_ms,
        )
    provider.add_span_processor(GatedProcessor(inner, counters))

    policy = content_policy(
        config.capture_content, redact, config.content_max_bytes, default_redaction=default_redaction
    )
    handle = TracingHandle(
        config,
        provider,
        counters,
        policy,
        raw if isinstance(raw, InMemorySpanExporter) else None,
        raw,
    )
    meter = (meter_provider or metrics.get_meter_provider()).get_meter(
        _state.INSTRUMENTATION_NAME, _state.INSTRUMENTATION_VERSION
    )
    _state.activate(handle.tracer, policy, GenAIMetrics(meter))
    atexit.register(handle._atexit)
    return handle


def _install_global(handle: TracingHandle) -> None:
    global _global_installed
    if _global_installed:
        _log.warning("steplens: a global tracer provider was already installed; not replacing it")
        return
    trace.set_tracer_provider(handle.provider)
    _global_installed = True


def setup(
    service_name: str | None = None,
    service_version: str | None = None,
    environment: str | None = None,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    content_max_bytes: int | None = None,
    exporter: SpanExporter | None = None,
    *,
    meter_provider: MeterProvider | None = None,
    install_global: bool = False,
    default_redaction: bool = True,
    export_timeout_s: float | None = None,
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
    schedule_delay_ms: float | None = None,
    shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S,
) -> TracingHandle:
    """Configure tracing for this process and make the span helpers record into it.

    service_name: None → `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`), else
    "steplens-agent".
    endpoint: an OTLP/HTTP traces URL; None → `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
    `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else http://127.0.0.1:4318/v1/traces.
    "console" prints spans; "memory" keeps them in `handle.memory_exporter` (synchronously).
    headers / export_timeout_s: None → the standard `OTEL_EXPORTER_OTLP_*` variables.
    exporter: any SpanExporter (batched, counted) instead of the ones above.
    capture_content / content_max_bytes: None → environment (see tracer.config).
    redact: extra `str -> str` hook run after the default patterns (default_redaction=False
    turns those off).
    """
    global _active
    config = TracingConfig(
        service_name=service_name,
        service_version=service_version,
        environment=environment,
        endpoint=endpoint,
        headers=dict(headers) if headers else None,
        capture_content=capture_content,
        content_max_bytes=content_max_bytes,
        export_timeout_s=export_timeout_s,
        max_queue_size=max(1, max_queue_size),
        schedule_delay_ms=schedule_delay_ms,
        shutdown_timeout_s=shutdown_timeout_s,
        install_global=install_global,
        extra={"redact": redact, "exporter": exporter, "meter_provider": meter_provider,
               "default_redaction": default_redaction},
    )
    with _lock:
        if _active is not None and _active.active:
            if _active.config != config:
                differing = sorted(
                    k for k in config.__dataclass_fields__ if getattr(config, k) != getattr(_active.config, k)
                )
                _log.warning(
                    "steplens tracing is already set up; returning the existing handle "
                    "(ignored differing arguments: %s). Call handle.shutdown() first to reconfigure.",
                    ", ".join(differing),
                )
            return _active
        handle = _build(config, redact, exporter, meter_provider, default_redaction)
        _active = handle
    if install_global:
        _install_global(handle)
    return handle


def active_handle() -> TracingHandle | None:
    """The handle `setup()` returned, while it is not shut down."""
    return _active
