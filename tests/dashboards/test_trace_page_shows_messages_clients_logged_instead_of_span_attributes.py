"""Clients that log message content as OTLP log records instead of setting span attributes get
their messages on the Trace page, shown where span content is shown:

- the official openai-v2 instrumentation in `event_only` mode (real package, real `openai` client,
  fake OpenAI server, the SDK's OTLP/HTTP span and log exporters to a real server): its chat spans
  carry no content, its `gen_ai.client.inference.operation.details` records do; in
  `span_and_event` mode both do, and the span's own content is shown, once;
- the one-event-per-message form (`gen_ai.system/user.message`, `gen_ai.choice`) plus an
  evaluation result, which the page lists with its score.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from dashboards.models import Trace
from dashboards.trace_view import build_trace_view
from tests.dashboards.conftest import open_page, texts
from tests.dashboards.openai_v2_event_only_run import ANSWER, QUESTION
from tests.ingest.api.harness import BACKENDS
from tests.support.genai_logs import ANSWER_TEXT, SYSTEM_TEXT, USER_TEXT, chat_with_events
from tracer import conventions as c

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

REPO = Path(__file__).resolve().parents[2]


def _trace(url: str, trace_id: str) -> dict:
    answer = httpx.get(f"{url}/api/traces/{trace_id}", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize("mode", ["event_only", "span_and_event"])
def test_openai_v2_event_messages_shown_on_the_trace_page(start_ingest_server, ui_env, mode: str) -> None:
    from_logs = mode == "event_only"
    server = start_ingest_server(grpc_port=0)
    run = subprocess.run(
        [sys.executable, "-m", "tests.dashboards.openai_v2_event_only_run", server.http_url, mode],
        capture_output=True, text=True, timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    trace_id = run.stdout.strip()
    assert server.store.wait_loaded(10)

    doc = _trace(server.http_url, trace_id)
    chats = [s for s in doc["spans"] if s["operation"] == c.OperationClass.LLM]
    assert len(chats) == 2
    assert all((c.GEN_AI_INPUT_MESSAGES in s["attributes"]) is not from_logs for s in chats)
    assert all([e["event_name"] for e in s["logs"]] == [c.GEN_AI_EVENT_INFERENCE_DETAILS] for s in chats)

    view = build_trace_view(Trace.model_validate(doc))
    first, second = view.llm_calls
    assert first.messages_from_logs is from_logs and second.messages_from_logs is from_logs
    assert QUESTION in (first.input_messages or "")
    assert "get_weather" in (first.output_messages or "")
    assert ANSWER in (second.output_messages or "")
    assert '"role": "tool"' in (second.input_messages or "")

    ui_env(server.http_url)
    at = open_page("trace", {"trace_id": trace_id})
    assert not at.exception
    shown = texts(at)
    assert QUESTION in shown and ANSWER in shown
    source = " (from logs)" if from_logs else ""
    assert f"call 1: input messages{source}" in [t.label for t in at.tabs]
    assert shown.count(QUESTION) == 2  # in both calls' input, once each: never span and logs twice


def test_per_message_events_and_evaluations_shown_on_the_trace_page(start_ingest_server, ui_env) -> None:
    server = start_ingest_server(grpc_port=0)
    chat = chat_with_events()
    logs = OTLPLogExporter(endpoint=server.http_url + "/v1/logs", timeout=10)
    spans = OTLPSpanExporter(endpoint=server.http_url + "/v1/traces", timeout=10)
    try:
        logs.export(chat.logs)  # content first, its spans later
        spans.export(chat.spans)
    finally:
        logs.shutdown()
        spans.shutdown()
    assert server.store.wait_loaded(10)

    view = build_trace_view(Trace.model_validate(_trace(server.http_url, chat.trace_hex)))
    [call] = view.llm_calls
    assert call.messages_from_logs
    assert '"role": "system"' in (call.input_messages or "") and SYSTEM_TEXT in (call.input_messages or "")
    assert USER_TEXT in (call.input_messages or "")
    assert ANSWER_TEXT in (call.output_messages or "")
    [evaluation] = view.evaluations
    assert (evaluation.name, evaluation.score_value, evaluation.span_id) == ("relevance", 0.75, chat.chat_span_hex)

    ui_env(server.http_url)
    at = open_page("trace", {"trace_id": chat.trace_hex})
    assert not at.exception
    shown = texts(at)
    assert USER_TEXT in shown and ANSWER_TEXT in shown
    table = next(df.value for df in at.dataframe if "evaluation" in df.value.columns)
    assert list(table["evaluation"]) == ["relevance"] and list(table["score"]) == [0.75]
    assert list(table["label"]) == ["relevant"]
