"""steplens tracer package: OpenTelemetry setup, span helpers and the span conventions.

Attributes are imported lazily so that `import tracer.conventions` (done by ingest) does not pull
in the OpenTelemetry SDK or an exporter.

    handle = tracer.setup(service_name="my-agent")          # once per process
    with tracer.spans.run_span("weather") as run: ...        # used by the kernel
    handle.stats(); handle.shutdown()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.export import ExportStats
    from tracer.provider import TracingHandle, active_handle, setup

__all__ = ["ExportStats", "TracingHandle", "active_handle", "setup"]

_LAZY = {
    "setup": "tracer.provider",
    "TracingHandle": "tracer.provider",
    "active_handle": "tracer.provider",
    "ExportStats": "tracer.export",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracer' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
