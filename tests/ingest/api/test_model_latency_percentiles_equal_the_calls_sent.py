"""GET /api/models: per model, the LLM calls of the runs in scope with their duration and
time-to-first-chunk percentiles, streamed calls and token parts, exactly as the spans sent them
(through a real server); agent spans' aggregates and other projects never count."""

from __future__ import annotations

import statistics

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tracer import conventions as c

T0 = 1_764_000_000_000_000_000
MS = 1_000_000
KEY_A, KEY_B = "models-key-a-0123456789", "models-key-b-0123456789"


def _runs(agent: str, model: str, durations_ms: list[int], ttfc_ms: list[int | None], wrapped: bool = False):
    """One run of `agent` per call: invoke_agent (with aggregate usage) > chat (model), the chat
    inside a wrapper LLM span when `wrapped` (LlamaIndex, pydantic-ai under Logfire)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for i, (duration, ttfc) in enumerate(zip(durations_ms, ttfc_ms, strict=True)):
        start = T0 + i * 10_000 * MS
        run = tracer.start_span(
            f"invoke_agent {agent}", start_time=start,
            attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: agent,
                        c.GEN_AI_USAGE_INPUT_TOKENS: 999_999},
        )  # fmt: skip
        attrs = {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: model,
            c.GEN_AI_USAGE_INPUT_TOKENS: 100, c.GEN_AI_USAGE_OUTPUT_TOKENS: 10,
            c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: 4,
        }  # fmt: skip
        if ttfc is not None:
            attrs[c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = ttfc / 1000
            attrs[c.GEN_AI_REQUEST_STREAM] = True
        parent = set_span_in_context(run)
        if wrapped:  # a framework's LLM span around the instrumented client's (same usage, longer)
            outer = tracer.start_span(f"chat {model}", context=parent, start_time=start, attributes=attrs)
            parent = set_span_in_context(outer)
        chat = tracer.start_span(f"chat {model}", context=parent, start_time=start + MS, attributes=attrs)
        chat.end(end_time=start + MS + duration * MS)
        if wrapped:
            outer.end(end_time=start + (duration + 2) * MS)
        run.end(end_time=start + (duration + 2) * MS)
    provider.shutdown()
    return encode_spans(memory.get_finished_spans())


def _inclusive(values: list[float], q: float) -> float:
    """DuckDB quantile_cont: linear interpolation between closest ranks."""
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[round(q * 100) - 1]


@pytest.fixture
def loaded(make_server):
    server = make_server(api_keys=[ApiKey(key=KEY_A, project="A"), ApiKey(key=KEY_B, project="B")])
    durations = [100 + 37 * i for i in range(20)]
    ttfcs = [20 + 9 * i for i in range(20)]
    server.send(_runs("fast", "gpt-4o-mini", durations, ttfcs, wrapped=True), key=KEY_A)
    server.send(_runs("slow", "claude-sonnet-4-5", [900, 1100, 1000], [None, None, None]), key=KEY_A)
    server.send(_runs("other", "gpt-4o-mini", [5, 5], [1, 1]), key=KEY_B)
    return server, durations, ttfcs


@pytest.mark.parametrize("backend", BACKENDS)
def test_percentiles_per_model(loaded):
    server, durations, ttfcs = loaded
    r = server.get("/api/models", key=KEY_A)
    assert r.status_code == 200, r.text
    rows = {m["model"]: m for m in r.json()["models"]}
    assert set(rows) == {"gpt-4o-mini", "claude-sonnet-4-5"}
    mini = rows["gpt-4o-mini"]
    assert (mini["llm_calls"], mini["ttfc_calls"], mini["streamed_calls"], mini["errors"]) == (20, 20, 20, 0)
    assert mini["ttfc_p50_ms"] == pytest.approx(_inclusive(ttfcs, 0.5))
    assert mini["ttfc_p95_ms"] == pytest.approx(_inclusive(ttfcs, 0.95))
    assert mini["duration_p50_ms"] == pytest.approx(_inclusive(durations, 0.5))
    assert mini["duration_p95_ms"] == pytest.approx(_inclusive(durations, 0.95))
    assert (mini["input_tokens"], mini["output_tokens"], mini["reasoning_tokens"]) == (2000, 200, 80)
    sonnet = rows["claude-sonnet-4-5"]
    assert (sonnet["llm_calls"], sonnet["ttfc_calls"], sonnet["ttfc_p50_ms"]) == (3, 0, None)
    assert sonnet["duration_p50_ms"] == pytest.approx(1000)


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_filters_select_the_calls(loaded):
    server, _, _ = loaded
    only = server.get("/api/models", key=KEY_A, agent="slow").json()["models"]
    assert [(m["model"], m["llm_calls"]) for m in only] == [("claude-sonnet-4-5", 3)]
    b = server.get("/api/models", key=KEY_B).json()["models"]
    assert [(m["model"], m["llm_calls"], m["ttfc_p50_ms"]) for m in b] == [("gpt-4o-mini", 2, 1.0)]
    assert server.get("/api/models", key=KEY_A, project="B").json()["models"] == []
    assert server.get("/api/models", key=KEY_A, bogus="1").status_code == 422
