"""The process-wide "what are we tracing into" state read by the span helpers.

Kept apart from `tracer.provider` so that the helpers (imported by the kernel on every run) need
only the OpenTelemetry API: with nothing set up, the kernel never imports the SDK or an exporter.

Without a handle the helpers use the API's proxy tracer and meter: a no-op until somebody installs
a global provider, and then that provider (so users who configure OpenTelemetry themselves get our
spans without calling `tracer.setup`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from opentelemetry import metrics, trace

from tracer.content import ContentPolicy
from tracer.genai_metrics import GenAIMetrics

INSTRUMENTATION_NAME = "steplens"
INSTRUMENTATION_VERSION = "0.1.0"


@dataclass(slots=True)
class Active:
    tracer: trace.Tracer
    policy: ContentPolicy | None  # None: resolve from the environment on first use
    metrics: GenAIMetrics


def _default() -> Active:
    return Active(
        tracer=trace.get_tracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION),
        policy=None,
        metrics=GenAIMetrics(metrics.get_meter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION)),
    )


_DEFAULT = _default()
current: Active = _DEFAULT


_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
_UNKNOWN = object()
# get_tracer_provider() looks this variable up in os.environ on every call (~1 µs, as much as the
# whole no-op path); a provider named by the environment is a start-up setting, so read it once.
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_METER_PROVIDER_FROM_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ


def recording_possible() -> bool:
    """False only when no span can record: no `tracer.setup()` handle is active and no SDK tracer
    provider is installed globally. Callers use it to skip span work entirely on the no-op path
    (checked per call, so a provider installed later is picked up at once)."""
    if current is not _DEFAULT:
        return True
    # The API's global slot, read directly on the hot path; the public getter if it ever moves.
    provider = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None:
        if not _PROVIDER_FROM_ENV:
            return False
        provider = trace.get_tracer_provider()
    elif provider is _UNKNOWN:
        provider = trace.get_tracer_provider()
    return not isinstance(provider, _NO_SDK)


def metrics_possible() -> bool:
    """False when the GenAI metrics cannot record: no handle and no global meter provider
    (the same shortcut as `recording_possible`, for the metrics API's global slot)."""
    if current is not _DEFAULT:
        return True
    from opentelemetry.metrics import _internal as metrics_internal

    provider = getattr(metrics_internal, "_METER_PROVIDER", _UNKNOWN)
    if provider is None:
        if not _METER_PROVIDER_FROM_ENV:
            return False
        provider = metrics.get_meter_provider()
    elif provider is _UNKNOWN:
        provider = metrics.get_meter_provider()
    return not isinstance(provider, metrics.NoOpMeterProvider) and type(provider).__name__ != "_ProxyMeterProvider"


def policy() -> ContentPolicy:
    """The active content policy; without setup, built once from the environment."""
    active = current
    if active.policy is None:
        from tracer.config import content_policy

        active.policy = content_policy()
    return active.policy


def activate(tracer: trace.Tracer, policy: ContentPolicy, genai_metrics: GenAIMetrics) -> None:
    global current
    current = Active(tracer=tracer, policy=policy, metrics=genai_metrics)


def deactivate() -> None:
    """Back to the API proxies; the env-derived policy is re-read so env changes take effect."""
    global current
    _DEFAULT.policy = None
    current = _DEFAULT
