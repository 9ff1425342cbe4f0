"""Each chat attempt records the GenAI client metrics (token usage by type, duration in seconds)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tracer import conventions as c
from tracer import spans


def _points(reader: InMemoryMetricReader) -> dict[str, list]:
    out: dict[str, list] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
                out.setdefault(metric.name + ":unit", []).append(metric.unit)
    return out


def test_token_usage_and_duration_per_attempt(memory_handle_factory):
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    memory_handle_factory(meter_provider=meter_provider)

    with pytest.raises(TimeoutError), spans.chat_span(model="big", provider="openai"):
        raise TimeoutError("slow")
    with spans.chat_span(model="small", provider="openai", fallback_from="big") as chat:
        chat.record_response(response_model="small-2024", input_tokens=120, output_tokens=30)

    points = _points(reader)
    assert points[c.METRIC_OPERATION_DURATION + ":unit"] == ["s"]
    durations = {(p.attributes[c.GEN_AI_REQUEST_MODEL], p.attributes.get(c.ERROR_TYPE)): p
                 for p in points[c.METRIC_OPERATION_DURATION]}
    assert set(durations) == {("big", "TimeoutError"), ("small", None)}
    ok = durations[("small", None)]
    assert ok.count == 1 and 0 <= ok.sum < 5
    assert ok.attributes[c.GEN_AI_OPERATION_NAME] == "chat" and ok.attributes[c.GEN_AI_PROVIDER_NAME] == "openai"
    assert ok.attributes[c.GEN_AI_RESPONSE_MODEL] == "small-2024"

    tokens = {p.attributes[c.GEN_AI_TOKEN_TYPE]: p for p in points[c.METRIC_TOKEN_USAGE]}
    assert set(tokens) == {"input", "output"}  # the failed attempt reported no usage
    assert tokens["input"].sum == 120 and tokens["output"].sum == 30
    assert tokens["input"].attributes[c.GEN_AI_REQUEST_MODEL] == "small"
    assert 64 in tokens["input"].explicit_bounds  # the GenAI-recommended buckets
    meter_provider.shutdown()


def test_metrics_recorded_even_when_the_span_is_sampled_out(memory_handle_factory):
    """A caller's unsampled trace turns our spans off, but the LLM call still counts in metrics."""
    from opentelemetry import context, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    handle = memory_handle_factory(meter_provider=meter_provider)
    unsampled = SpanContext(trace_id=0x1234, span_id=0x5678, is_remote=True, trace_flags=TraceFlags(0))
    token = context.attach(trace.set_span_in_context(NonRecordingSpan(unsampled)))
    try:
        with spans.chat_span(model="m") as chat:
            assert chat.recording is False
            chat.record_response(input_tokens=1, output_tokens=1)
    finally:
        context.detach(token)
    assert handle.memory_exporter.get_finished_spans() == ()
    assert len(_points(reader)[c.METRIC_TOKEN_USAGE]) == 2
    meter_provider.shutdown()
