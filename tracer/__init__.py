"""steplens tracer package: OpenTelemetry setup, span helpers and the span conventions.

Attributes are imported lazily so that `import tracer.conventions` (done by ingest) does not pull
in the OpenTelemetry SDK or an exporter.

    handle = tracer.setup(service_name="my-agent")          # once per process
    with tracer.spans.run_span("weather") as run: ...        # used by the kernel
    handle.stats(); handle.shutdown()
    tracer.feedback(result.trace_id, "helpful", True, user="u-42")   # an end user's judgment
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.export import ExportStats
    from tracer.provider import TracingHandle, active_handle, setup
    from tracer.user_feedback import FeedbackResult, feedback

__all__ = ["ExportStats", "FeedbackResult", "TracingHandle", "active_handle", "feedback", "setup"]

_LAZY = {
    "setup": "tracer.provider",
    "TracingHandle": "tracer.provider",
    "active_handle": "tracer.provider",
    "ExportStats": "tracer.export",
    "feedback": "tracer.user_feedback",
    "FeedbackResult": "tracer.user_feedback",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracer' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
