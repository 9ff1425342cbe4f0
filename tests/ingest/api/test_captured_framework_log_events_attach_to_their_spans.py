"""The OTLP logs bodies captured from real frameworks (tests/fixtures/frameworks: Microsoft Agent
Framework's per-message events and plain logs, Google ADK, openlit and the official openai-v2
instrumentation's inference-details events) are accepted whole by `POST /v1/logs` when posted as
the client did, before their spans; every record is stored once and listed with its span in
`GET /api/traces/{id}`, and each run's LLM calls show their messages: the span's own when the
client set both, the logged ones when only the log records carry them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from dashboards.models import Trace
from dashboards.trace_view import build_trace_view
from tests.ingest.api.harness import BACKENDS
from tracer import conventions as c

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
WITH_LOGS = sorted(
    d.name
    for d in FIXTURES.iterdir()
    if (d / "manifest.json").exists()
    and any(b["signal"] == "logs" for b in json.loads((d / "manifest.json").read_text())["bodies"])
)


def _post(url: str, directory: Path, body: dict) -> httpx.Response:
    headers = {"content-type": body["content_type"]}
    if body["content_encoding"]:
        headers["content-encoding"] = body["content_encoding"]
    return httpx.post(url + body["path"], content=(directory / body["file"]).read_bytes(), headers=headers, timeout=30)


def _records(directory: Path, body: dict) -> list[tuple[str, str]]:
    data = (directory / body["file"]).read_bytes()
    if body["content_encoding"] == "gzip":
        data = gzip.decompress(data)
    request = ExportLogsServiceRequest.FromString(data)
    return [(r.trace_id.hex(), r.span_id.hex()) for rl in request.resource_logs for sl in rl.scope_logs
            for r in sl.log_records]


def test_fixtures_with_log_bodies_exist() -> None:
    assert {"agent_framework", "google_adk", "openai_v2_events", "openlit"} <= set(WITH_LOGS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("framework", WITH_LOGS)
def test_captured_log_events_stored_once_and_attached(start_ingest_server, framework: str) -> None:
    server = start_ingest_server(grpc_port=0)
    directory = FIXTURES / framework
    manifest = json.loads((directory / "manifest.json").read_text())
    logs = [b for b in manifest["bodies"] if b["signal"] == "logs"]
    records = [rec for body in logs for rec in _records(directory, body)]
    for body in logs:  # the content first, its spans after
        answer = _post(server.http_url, directory, body)
        assert answer.status_code == 200, answer.text
        assert not ExportLogsServiceResponse.FromString(answer.content).HasField("partial_success")
    for body in manifest["bodies"]:
        if body["signal"] == "traces":
            assert _post(server.http_url, directory, body).status_code == 200
    assert server.store.wait_loaded(20)
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM log_records").fetchone()[0] == len(records)

    for run in manifest["runs"]:
        doc = httpx.get(f"{server.http_url}/api/traces/{run['trace_id']}", timeout=10).json()
        span_ids = {s["span_id"] for s in doc["spans"]}
        expected = sorted(s for t, s in records if t == run["trace_id"] and s in span_ids)
        attached = sorted(entry["span_id"] for s in doc["spans"] for entry in s["logs"])
        assert attached == expected
        assert all(entry["span_id"] == s["span_id"] for s in doc["spans"] for entry in s["logs"])
        assert len(doc["logs"]) == sum(1 for t, s in records if t == run["trace_id"] and s not in span_ids)
        if not expected:
            continue
        # Each LLM call that logged content shows input messages: its span's own when it has them
        # (Agent Framework, ADK and openlit set both), else the logged ones (openai-v2 event_only).
        view = build_trace_view(Trace.model_validate(doc))
        spans = {x["span_id"]: x for x in doc["spans"]}
        logging_calls = [call for call in view.llm_calls if spans[call.span_id]["logs"]]
        assert logging_calls, f"{framework} {run['scenario']}: no LLM call has log records"
        for call in logging_calls:
            on_span = c.GEN_AI_INPUT_MESSAGES in spans[call.span_id]["attributes"]
            assert call.input_messages, f"{framework} {run['scenario']} {call.name}: no input messages shown"
            assert call.messages_from_logs is not on_span
