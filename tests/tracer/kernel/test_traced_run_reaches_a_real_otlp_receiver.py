"""A kernel run's spans leave the process as real OTLP/HTTP protobuf: decoded with
opentelemetry-proto from a receiver on 127.0.0.1 (port 0), and read back through the real
steplens ingest server's query API (`GET /api/runs`, `GET /api/traces/{id}`)."""

from __future__ import annotations

import time

import httpx
import pytest

import tracer
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.types import LLMResponse, Usage
from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.tracer.kernel.kernel_runs import act, agent, final
from tests.tracer.otlp_sink import otlp_sink
from tracer import conventions as c


def _llm() -> ScriptedLLM:
    return ScriptedLLM([
        LLMResponse(text=act("add", a=2, b=3), model="gpt-4o-mini", usage=Usage(input_tokens=300, output_tokens=20)),
        LLMResponse(text=act("fail", x=1), model="gpt-4o-mini", usage=Usage(input_tokens=340, output_tokens=15)),
        LLMResponse(text=final("5"), model="gpt-4o-mini", usage=Usage(input_tokens=400, output_tokens=8)),
    ])


def _value(any_value):
    return getattr(any_value, any_value.WhichOneof("value"))


async def test_kernel_run_is_posted_as_decodable_otlp() -> None:
    with otlp_sink() as sink:
        handle = tracer.setup(service_name="kernel-otlp", endpoint=sink.url + "/v1/traces", schedule_delay_ms=50)
        try:
            result = await agent(_llm(), budget=Budget(max_steps=6)).run("what is 2+3?")
            assert handle.force_flush(timeout_s=5)
        finally:
            assert handle.shutdown(timeout_s=5)
    assert result.ok and sink.requests
    assert all(r.headers["content-type"] == "application/x-protobuf" for r in sink.requests)
    got = sink.spans()
    names = sorted(s.name for s in got)
    assert names == sorted(
        ["invoke_agent tester", "step 1", "step 2", "step 3"] + ["budget_check"] * 3 + ["chat scripted"] * 3
        + ["execute_tool add", "execute_tool fail"] + ["truncate_observation"] * 2
    )
    assert {s.trace_id.hex() for s in got} == {result.trace_id}
    by_id = {s.span_id: s for s in got}
    run = next(s for s in got if s.name == "invoke_agent tester")
    assert run.parent_span_id == b""
    for s in got:
        if s.name.startswith("step "):
            assert by_id[s.parent_span_id] is run
        elif s is not run:
            assert by_id[s.parent_span_id].name.startswith("step "), s.name
        expected = s.SPAN_KIND_CLIENT if s.name.startswith("chat ") else s.SPAN_KIND_INTERNAL
        assert s.kind == expected, s.name
    a = {kv.key: _value(kv.value) for kv in run.attributes}
    assert a[c.RUN_OK] is True and a[c.RUN_STOP_REASON] == "finish" and a[c.RUN_STEPS] == 3
    assert a[c.USAGE_INPUT_TOKENS] == 1040 and a[c.USAGE_OUTPUT_TOKENS] == 43
    failed = next(s for s in got if s.name == "execute_tool fail")
    assert failed.status.code == failed.status.STATUS_CODE_ERROR
    assert {kv.key: _value(kv.value) for kv in failed.attributes}[c.ERROR_TYPE] == "exception"
    assert handle.stats().exported == len(got) and handle.stats().failed == 0


async def test_kernel_run_read_back_from_the_steplens_server(ingest_server) -> None:  # noqa: F811
    handle = tracer.setup(service_name="kernel-e2e", endpoint=ingest_server.http_url + "/v1/traces",
                          schedule_delay_ms=50)
    try:
        result = await agent(_llm(), budget=Budget(max_steps=6)).run("what is 2+3?")
        assert handle.force_flush(timeout_s=10)
    finally:
        assert handle.shutdown(timeout_s=5)
    assert handle.stats().failed == 0
    ingest_server.store.wait_loaded(10)

    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        deadline = time.monotonic() + 10
        while True:
            runs = client.get("/api/runs").raise_for_status().json()["runs"]
            if runs or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        (run,) = runs
        assert run["trace_id"] == result.trace_id
        assert (run["agent"], run["version"], run["ok"], run["stop_reason"]) == ("tester", "1.0", True, "finish")
        assert run["steps"] == len(result.steps) == 3
        assert run["input_tokens"] == result.usage.input_tokens == 1040
        assert run["output_tokens"] == result.usage.output_tokens == 43
        assert run["cost_usd"] == pytest.approx(result.cost_usd)
        assert run["llm_calls"] == 3 and run["tool_calls"] == 2 and run["tool_errors"] == 1

        trace = client.get(f"/api/traces/{result.trace_id}").raise_for_status().json()
    spans = trace["spans"]
    assert len(spans) == 14
    by_id = {s["span_id"]: s for s in spans}
    root = next(s for s in spans if s["parent_span_id"] is None)
    assert root["name"] == "invoke_agent tester" and root["operation"] == "agent"
    ops = sorted(s["operation"] for s in spans)
    assert ops == sorted(["agent"] + ["step"] * 3 + ["budget"] * 3 + ["llm"] * 3 + ["tool"] * 2 + ["truncate"] * 2)
    tool_error = next(s for s in spans if s["name"] == "execute_tool fail")
    assert tool_error["status"] == "ERROR" and tool_error["error_type"] == "exception"
    assert by_id[tool_error["parent_span_id"]]["name"] == "step 2"
