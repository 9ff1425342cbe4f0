"""`OTEL_SERVICE_NAME` keeps its standard meaning (design.md §4): `tracer.setup()` without a
`service_name` used to stamp "steplens-agent" over it, so every process configured the standard
way showed up under the same service. Precedence: argument, OTEL_SERVICE_NAME, `service.name` in
OTEL_RESOURCE_ATTRIBUTES, then our default (never the SDK's "unknown_service")."""

from __future__ import annotations

import pytest

import tracer
from tracer import conventions as c
from tracer import spans
from tracer.provider import DEFAULT_SERVICE_NAME


@pytest.mark.parametrize(
    ("argument", "service_env", "resource_env", "expected"),
    [
        (None, "billing-agent", None, "billing-agent"),
        (None, None, "service.name=from-resource,team=ops", "from-resource"),
        (None, "billing-agent", "service.name=from-resource", "billing-agent"),
        ("explicit", "billing-agent", "service.name=from-resource", "explicit"),
        (None, None, None, DEFAULT_SERVICE_NAME),
    ],
)
def test_service_name_precedence(monkeypatch, argument, service_env, resource_env, expected):
    for name, value in (("OTEL_SERVICE_NAME", service_env), ("OTEL_RESOURCE_ATTRIBUTES", resource_env)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    handle = tracer.setup(service_name=argument, endpoint="memory")
    try:
        with spans.run_span("a"):
            pass
        (span,) = handle.memory_exporter.get_finished_spans()
    finally:
        handle.shutdown(timeout_s=2)
    assert span.resource.attributes[c.SERVICE_NAME] == expected
    if resource_env and "team=ops" in resource_env:
        assert span.resource.attributes["team"] == "ops"  # the rest of the variable still applies
