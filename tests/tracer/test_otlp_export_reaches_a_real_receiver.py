"""Spans leave the process as real OTLP/HTTP protobuf that a receiver can decode.

A tiny HTTP server on 127.0.0.1 (port 0) captures the POST bodies; they are decoded with
opentelemetry-proto's ExportTraceServiceRequest. Also covers the standard OTEL_EXPORTER_OTLP_*
variables (endpoint and headers) and a backend answering errors (counted as failed, not lost
silently).
"""

from __future__ import annotations

import tracer
from tests.tracer.otlp_sink import otlp_sink
from tracer import conventions as c
from tracer import spans


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


def test_spans_are_posted_as_decodable_otlp_protobuf():
    with otlp_sink() as sink:
        handle = tracer.setup(service_name="otlp-test", service_version="1.0", environment="ci",
                              endpoint=sink.url + "/v1/traces", headers={"x-steplens-key": "k-1"},
                              schedule_delay_ms=50)
        try:
            with spans.run_span("agent", model="m") as run:
                with spans.step_span(1), spans.chat_span(model="m", provider="openai") as chat:
                    chat.record_response(input_tokens=5, output_tokens=7)
                run.finish(ok=True, stop_reason=c.StopReason.FINISH, steps=1)
            trace_id = run.trace_id
            assert handle.force_flush(timeout_s=5)
        finally:
            assert handle.shutdown(timeout_s=5)
        assert sink.requests, "nothing was posted"
        first = sink.requests[0]
        assert first.path == "/v1/traces"
        assert first.headers["content-type"] == "application/x-protobuf"
        assert first.headers["x-steplens-key"] == "k-1"
        got = sink.spans()
        assert sorted(s.name for s in got) == ["chat m", "invoke_agent agent", "step 1"]
        assert {s.trace_id.hex() for s in got} == {trace_id}
        resource = {kv.key: kv.value.string_value for kv in sink.decoded()[0].resource_spans[0].resource.attributes}
        assert resource[c.SERVICE_NAME] == "otlp-test" and resource[c.SERVICE_VERSION] == "1.0"
        assert resource[c.DEPLOYMENT_ENVIRONMENT_NAME] == "ci"
        chat_span = next(s for s in got if s.name == "chat m")
        assert chat_span.kind == chat_span.SPAN_KIND_CLIENT
        a = _attrs(chat_span)
        assert a[c.GEN_AI_USAGE_INPUT_TOKENS] == 5 and a[c.GEN_AI_USAGE_OUTPUT_TOKENS] == 7
        assert a[c.GEN_AI_PROVIDER_NAME] == "openai"
        assert handle.stats().exported == 3 and handle.stats().failed == 0


def test_standard_otel_environment_variables_are_honoured(monkeypatch):
    with otlp_sink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc,x-tenant=t1")
        handle = tracer.setup(service_name="env-test", schedule_delay_ms=50)
        try:
            with spans.run_span("agent"):
                pass
            assert handle.force_flush(timeout_s=5)
        finally:
            handle.shutdown(timeout_s=5)
        assert [r.path for r in sink.requests] == ["/v1/traces"]  # base endpoint + the signal path
        assert sink.requests[0].headers["x-tenant"] == "t1"
        assert sink.requests[0].headers["authorization"] == "Bearer abc"


def test_traces_specific_endpoint_is_used_as_is(monkeypatch):
    with otlp_sink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/unused")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", sink.url + "/custom/traces")
        handle = tracer.setup(service_name="env-test", schedule_delay_ms=50)
        try:
            with spans.run_span("agent"):
                pass
            assert handle.force_flush(timeout_s=5)
        finally:
            handle.shutdown(timeout_s=5)
        assert [r.path for r in sink.requests] == ["/custom/traces"]


def test_backend_answering_errors_is_counted_as_failed():
    with otlp_sink(status=400) as sink:
        handle = tracer.setup(service_name="err-test", endpoint=sink.url + "/v1/traces", schedule_delay_ms=50)
        try:
            with spans.run_span("agent"), spans.step_span(1):
                pass
            handle.force_flush(timeout_s=5)
            stats = handle.stats()
        finally:
            handle.shutdown(timeout_s=5)
        assert sink.requests  # it did try
        assert stats.failed == 2 and stats.exported == 0
        assert stats.last_error is not None and "FAILURE" in stats.last_error
