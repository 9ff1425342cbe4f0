"""GenAI events sent as OTLP log records (the SDK's real exporters, separate requests) show on their
span in `GET /api/traces/{id}` whichever arrives first: logs before spans, spans before logs, or
logs split around the spans. Evaluation results are listed with the span they score; records
whose span never arrived stay visible at trace level instead of vanishing; records sent under
another project's key never attach to this project's trace."""

from __future__ import annotations

import random

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from tests.ingest.api.harness import BACKENDS
from tests.support.genai_logs import ANSWER_TEXT, USER_TEXT, chat_with_events, log_provider
from tracer import conventions as c

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

EVENTS = [c.GEN_AI_EVENT_SYSTEM_MESSAGE, c.GEN_AI_EVENT_USER_MESSAGE, c.GEN_AI_EVENT_CHOICE,
          c.GEN_AI_EVENT_EVALUATION_RESULT]


def _send_spans(server, spans) -> None:
    exporter = OTLPSpanExporter(endpoint=server.http_url + "/v1/traces", timeout=10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert server.store.wait_loaded(10)


def _send_logs(server, logs) -> None:
    exporter = OTLPLogExporter(endpoint=server.http_url + "/v1/logs", timeout=10)
    try:
        assert exporter.export(logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert server.store.wait_loaded(10)


def _trace(server, trace_hex: str) -> httpx.Response:
    return httpx.get(f"{server.http_url}/api/traces/{trace_hex}", timeout=10)


@pytest.mark.parametrize("order", ["logs_first", "spans_first", "logs_around_spans"])
def test_events_attach_to_their_span_in_any_arrival_order(ingest_server, order: str) -> None:
    chat = chat_with_events()
    logs = list(chat.logs)
    if order == "logs_first":
        _send_logs(ingest_server, logs)
        assert _trace(ingest_server, chat.trace_hex).status_code == 404  # no spans yet: no trace
        _send_spans(ingest_server, chat.spans)
    elif order == "spans_first":
        _send_spans(ingest_server, chat.spans)
        assert _trace(ingest_server, chat.trace_hex).json()["spans"][1]["logs"] == []
        _send_logs(ingest_server, logs)
    else:
        _send_logs(ingest_server, logs[:2])
        _send_spans(ingest_server, chat.spans)
        _send_logs(ingest_server, logs[2:])

    answer = _trace(ingest_server, chat.trace_hex)
    assert answer.status_code == 200, answer.text
    trace = answer.json()
    by_id = {s["span_id"]: s for s in trace["spans"]}
    chat_logs = by_id[chat.chat_span_hex]["logs"]
    assert [entry["event_name"] for entry in chat_logs] == EVENTS  # oldest first
    assert by_id[chat.agent_span_hex]["logs"] == []
    assert chat_logs[1]["body"] == {"content": USER_TEXT}
    assert chat_logs[2]["body"]["message"] == {"role": "assistant", "content": ANSWER_TEXT}
    assert all(entry["span_id"] == chat.chat_span_hex for entry in chat_logs)
    assert all(entry["time"].endswith(("Z", "+00:00")) for entry in chat_logs)  # UTC, explicit
    assert trace["logs"] == []
    [evaluation] = trace["evaluations"]
    assert evaluation["span_id"] == chat.chat_span_hex
    assert (evaluation["name"], evaluation["score_value"], evaluation["score_label"], evaluation["explanation"]) == (
        "relevance", 0.75, "relevant", "answers the weather question"
    )


def test_records_whose_span_is_missing_stay_at_trace_level(ingest_server) -> None:
    chat = chat_with_events(evaluation=False)
    _send_spans(ingest_server, chat.spans)
    provider, memory = log_provider()
    ghost = SpanContext(int(chat.trace_hex, 16), random.getrandbits(64) or 1, is_remote=True,
                        trace_flags=TraceFlags(TraceFlags.SAMPLED))
    provider.get_logger("t").emit(event_name=c.GEN_AI_EVENT_USER_MESSAGE, body={"content": "lost span"},
                                  context=set_span_in_context(NonRecordingSpan(ghost)))
    provider.shutdown()
    _send_logs(ingest_server, memory.get_finished_logs())
    trace = _trace(ingest_server, chat.trace_hex).json()
    assert [entry["body"] for entry in trace["logs"]] == [{"content": "lost span"}]
    assert trace["logs"][0]["span_id"] == format(ghost.span_id, "016x")
    assert all(s["logs"] == [] for s in trace["spans"])
    assert trace["evaluations"] == []


def test_log_records_of_another_project_never_attach(start_ingest_server) -> None:
    from ingest.config import ApiKey

    keys = {p: f"{p}-key-0123456789abcdef" for p in ("alpha", "beta")}
    server = start_ingest_server(
        api_keys=[ApiKey(key=k, project=p, scopes=["ingest", "read"]) for p, k in keys.items()]
    )
    chat = chat_with_events()
    spans = OTLPSpanExporter(endpoint=server.http_url + "/v1/traces", headers={"x-api-key": keys["alpha"]}, timeout=10)
    logs = OTLPLogExporter(endpoint=server.http_url + "/v1/logs", headers={"x-api-key": keys["beta"]}, timeout=10)
    try:
        assert spans.export(chat.spans) is SpanExportResult.SUCCESS
        assert logs.export(chat.logs) is LogRecordExportResult.SUCCESS  # same ids, another project's key
    finally:
        spans.shutdown()
        logs.shutdown()
    assert server.store.wait_loaded(10)
    url = f"{server.http_url}/api/traces/{chat.trace_hex}"
    trace = httpx.get(url, headers={"x-api-key": keys["alpha"]}, timeout=10).json()
    assert all(s["logs"] == [] for s in trace["spans"]) and trace["logs"] == [] and trace["evaluations"] == []
    assert httpx.get(url, headers={"x-api-key": keys["beta"]}, timeout=10).status_code == 404
