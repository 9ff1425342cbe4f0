"""`gen_ai.evaluation.result` events from any OTel client (real SDK log exporter over OTLP/HTTP)
become scores with source `client`: numeric with the label kept beside it, categorical when only a
label is sent, on the span they were emitted under, joined to their run's agent; a retried export is
one score; records without a name, a value or a trace are no score; and evaluation results stored
before scores existed become scores through the migration.

The failure this covers: a client's evaluations visible only as log records, so none of the score
reads (and none of the regressions and alerts built on them) ever counted them."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from ingest.schema import EVALUATION_SCORES_BACKFILL, SPAN_EVALUATION_SCORES_BACKFILL
from tests.ingest.api.harness import BACKENDS
from tests.ingest.scores.conftest import get_scores
from tests.support.genai_logs import chat_with_events, log_provider
from tracer import conventions as c

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _export_logs(base: str, logs: Any) -> None:
    exporter = OTLPLogExporter(endpoint=base + "/v1/logs", timeout=10)
    try:
        assert exporter.export(logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _export_spans(base: str, spans: Any) -> None:
    exporter = OTLPSpanExporter(endpoint=base + "/v1/traces", timeout=10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _more_evaluations(trace_hex: str, span_hex: str) -> list[Any]:
    provider, memory = log_provider()
    logger = provider.get_logger("judge")
    ctx = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_hex, 16), int(span_hex, 16), False,
                                                           TraceFlags(1))))
    event = c.GEN_AI_EVENT_EVALUATION_RESULT
    logger.emit(event_name=event, attributes={c.GEN_AI_EVALUATION_NAME: "toxicity",
                                              c.GEN_AI_EVALUATION_SCORE_LABEL: "clean"}, context=ctx)
    logger.emit(event_name=event, attributes={c.GEN_AI_EVALUATION_NAME: "empty"}, context=ctx)  # no value
    logger.emit(event_name=event, attributes={c.GEN_AI_EVALUATION_SCORE_VALUE: 1.0}, context=ctx)  # no name
    logger.emit(event_name=event, attributes={c.GEN_AI_EVALUATION_NAME: "no_trace",
                                              c.GEN_AI_EVALUATION_SCORE_VALUE: 1.0})
    logger.emit(event_name=c.GEN_AI_EVENT_USER_MESSAGE, body={"content": "hi"}, context=ctx)
    provider.shutdown()
    return list(memory.get_finished_logs())


def test_evaluation_events_are_scores(scores_server: Any) -> None:
    base = scores_server.http_url
    chat = chat_with_events()
    _export_spans(base, chat.spans)
    _export_logs(base, chat.logs)
    _export_logs(base, chat.logs)  # a retried export
    _export_logs(base, _more_evaluations(chat.trace_hex, chat.chat_span_hex))
    assert scores_server.store.wait_loaded(10)

    scores = {s["name"]: s for s in get_scores(base, trace_id=chat.trace_hex)}
    assert set(scores) == {"relevance", "toxicity"}
    relevance = scores["relevance"]
    assert (relevance["value"], relevance["label"], relevance["data_type"]) == (0.75, "relevant", "numeric")
    assert relevance["comment"] == "answers the weather question"
    assert (relevance["source"], relevance["author"]) == ("client", "logs-tests")
    assert relevance["span_id"] == chat.chat_span_hex and relevance["agent"] == "weather"
    assert relevance["score_id"].startswith("otel-")
    toxicity = scores["toxicity"]
    assert (toxicity["value"], toxicity["data_type"]) == ("clean", "categorical")
    assert [s["name"] for s in get_scores(base, source="client")].count("relevance") == 1
    assert {s["name"] for s in get_scores(base)} == {"relevance", "toxicity"}

    if scores_server.store.name != "duckdb":
        return  # the backfill below is a DuckDB migration; ClickHouse stores had scores from their start
    # a store whose evaluation records were kept before scores existed: the migration derives them
    def older_store(conn: Any) -> list[tuple[Any, ...]]:
        conn.execute("DELETE FROM scores")
        conn.execute(EVALUATION_SCORES_BACKFILL)
        conn.execute(EVALUATION_SCORES_BACKFILL)  # and only once, were it run twice
        return conn.execute("SELECT name, value_numeric, value_label, source FROM scores ORDER BY name").fetchall()

    assert scores_server.store.run_write(older_store).result(10) == [
        ("relevance", 0.75, "relevant", "client"), ("toxicity", None, "clean", "client")]


def test_evaluation_span_events_are_scores(scores_server: Any) -> None:
    """The span-event form of the convention (an SDK `span.add_event`), sent twice, is one score."""
    from tests.support.genai_logs import span_provider

    provider, memory = span_provider()
    tracer_ = provider.get_tracer("judge")
    with tracer_.start_as_current_span("invoke_agent weather") as agent:
        agent.set_attribute(c.GEN_AI_OPERATION_NAME, c.OP_INVOKE_AGENT)
        agent.set_attribute(c.GEN_AI_AGENT_NAME, "weather")
        agent.add_event(c.GEN_AI_EVENT_EVALUATION_RESULT, {
            c.GEN_AI_EVALUATION_NAME: "groundedness", c.GEN_AI_EVALUATION_SCORE_VALUE: 0.5,
            c.GEN_AI_EVALUATION_EXPLANATION: "half the claims cited"})
        agent.add_event("something.else", {c.GEN_AI_EVALUATION_NAME: "not an evaluation"})
        agent.add_event(c.GEN_AI_EVENT_EVALUATION_RESULT, {
            c.GEN_AI_EVALUATION_NAME: "pii", c.GEN_AI_EVALUATION_SCORE_LABEL: "none_found"})
    provider.shutdown()
    spans = memory.get_finished_spans()
    _export_spans(scores_server.http_url, spans)
    _export_spans(scores_server.http_url, spans)  # a retried export: the span is stored once, so are its scores
    assert scores_server.store.wait_loaded(10)
    trace_hex = format(spans[0].context.trace_id, "032x")
    got = {s["name"]: s for s in get_scores(scores_server.http_url, trace_id=trace_hex)}
    assert set(got) == {"groundedness", "pii"}
    assert (got["groundedness"]["value"], got["groundedness"]["comment"]) == (0.5, "half the claims cited")
    assert (got["pii"]["value"], got["pii"]["data_type"], got["pii"]["source"]) == ("none_found", "categorical", "client")
    assert got["pii"]["agent"] == "weather" and got["pii"]["span_id"] == format(spans[0].context.span_id, "016x")
    assert len(get_scores(scores_server.http_url)) == 2

    if scores_server.store.name != "duckdb":
        return  # the backfill below is a DuckDB migration; ClickHouse stores had scores from their start

    def older_store(conn: Any) -> list[tuple[Any, ...]]:  # spans stored before scores existed
        conn.execute("DELETE FROM scores")
        conn.execute(SPAN_EVALUATION_SCORES_BACKFILL)
        conn.execute(SPAN_EVALUATION_SCORES_BACKFILL)
        return conn.execute("SELECT name, value_numeric, value_label FROM scores ORDER BY name").fetchall()

    assert scores_server.store.run_write(older_store).result(10) == [("groundedness", 0.5, None),
                                                                      ("pii", None, "none_found")]
