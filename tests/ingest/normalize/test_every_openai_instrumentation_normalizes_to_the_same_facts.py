"""The real `openai` client under each of the three OpenAI instrumentations (official OTel GenAI,
OpenInference, OpenLLMetry), against the fake server: a tool-call reply, a plain reply, a streamed
reply and an HTTP 500. Their OTLP bodies must normalize to the same facts.

Each client runs in its own process (see instrumented_openai_run.py for why).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import spans_table
from tests.ingest.normalize import instrumented_openai_run as scenario

REPO = Path(__file__).resolve().parents[3]
EXPECTED_SCOPES = {
    "official": "opentelemetry.util.genai",
    "openinference": "openinference.instrumentation.openai",
    "openllmetry": "opentelemetry.instrumentation.openai",
}
CACHE_READS_REPORTED = {"official": False, "openinference": True, "openllmetry": True}


@pytest.fixture(scope="module", params=sorted(scenario.INSTRUMENTATIONS))
def rows(request) -> tuple[str, list[dict]]:
    which = request.param
    done = subprocess.run(
        [sys.executable, "-m", "tests.ingest.normalize.instrumented_openai_run", which],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    body = ExportTraceServiceRequest()
    body.ParseFromString(done.stdout)
    out = spans_table("proj", body, datetime.now(UTC)).to_pylist()
    assert out, "the instrumentation exported no spans"
    assert all(r["scope"].startswith(EXPECTED_SCOPES[which]) for r in out), {r["scope"] for r in out}
    assert {r["service"] for r in out} == {f"client-{which}"}
    return which, out


def llm(rows_: list[dict]) -> list[dict]:
    return [r for r in rows_ if r["operation"] == "llm"]


def test_four_llm_calls_one_failed(rows):
    _, out = rows
    calls = llm(out)
    assert len(calls) == 4 == len(out)
    assert [r["status"] for r in calls].count("ERROR") == 1


def test_models_and_provider(rows):
    _, out = rows
    calls = llm(out)
    assert {r["model"] for r in calls} == {scenario.MODEL, scenario.FAILING_MODEL}
    assert {r["provider"] for r in calls} == {"openai"}
    assert scenario.RESPONSE_MODEL in {r["response_model"] for r in calls}


def test_token_totals_including_the_stream(rows):
    which, out = rows
    usages = (scenario.TOOL_CALL_USAGE, scenario.PLAIN_USAGE, scenario.STREAM_USAGE)
    calls = [r for r in llm(out) if r["status"] != "ERROR"]
    assert sum(r["input_tokens"] for r in calls) == sum(u[0] for u in usages)
    assert sum(r["output_tokens"] for r in calls) == sum(u[1] for u in usages)
    cached = sum(r["cache_read_tokens"] or 0 for r in calls)
    assert cached == (sum(u[2] for u in usages) if CACHE_READS_REPORTED[which] else 0)


def test_failed_call_keeps_model_and_error_type(rows):
    _, out = rows
    (failed,) = [r for r in llm(out) if r["status"] == "ERROR"]
    assert failed["model"] == scenario.FAILING_MODEL
    assert failed["error_type"] is not None and failed["error_type"].endswith("InternalServerError")
    assert failed["input_tokens"] is None and failed["cost_usd"] is None


def test_successful_calls_are_priced_from_the_table(rows):
    _, out = rows
    for r in llm(out):
        if r["status"] == "ERROR":
            continue
        cached = r["cache_read_tokens"] or 0  # gpt-4o-mini list: 0.15 in, 0.075 cached, 0.60 out
        expected = ((r["input_tokens"] - cached) * 0.15 + cached * 0.075 + r["output_tokens"] * 0.60) / 1e6
        assert r["cost_source"] == "price_table"
        assert r["cost_usd"] == pytest.approx(expected)
