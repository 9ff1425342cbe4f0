"""Spans the server refuses (partial_success) and spans whose JSON ids are not hex are counted as
rejected with the reasons; the valid spans of the same line are stored; the exit code is 1."""

from __future__ import annotations

import json

from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.importer.collector_files import otlp_json, run_import, runs, trace_spans, write_jsonl


def test_rejected_spans_reported_rest_stored(ingest_server, tmp_path) -> None:
    emitter = Emitter()
    spec = emitter.run(RunSpec(agent="mostly_fine"))
    doc = otlp_json(emitter.request())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    leaf = [s for s in spans if s["name"].startswith("execute_tool")]
    leaf[0]["traceId"] = ""  # decodes to 0 bytes: the server rejects it (invalid_trace_id)
    leaf[1]["spanId"] = "not-hex!"  # cannot be decoded at all: dropped before sending, reported
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(doc) + "\n")

    summary, output = run_import(ingest_server.http_url, [path])
    assert summary.fatal is None, output
    assert (summary.spans_read, summary.spans_accepted, summary.spans_rejected) == (7, 5, 2)
    assert summary.exit_code == 1
    text = "\n".join(summary.rejections)
    assert f"{path}:1: span not sent: invalid_span_id" in text
    assert "invalid_trace_id" in text and "trace_id must be 16 bytes, got 0" in text  # the server's own message
    assert ingest_server.store.wait_loaded(10)
    assert len(trace_spans(ingest_server.http_url, spec.trace_id)) == 5
    assert [r["agent"] for r in runs(ingest_server.http_url)] == ["mostly_fine"]


def test_clean_import_exit_zero(ingest_server, tmp_path) -> None:
    emitter = Emitter()
    emitter.run(RunSpec())
    path = write_jsonl(tmp_path / "ok.jsonl", [emitter.request()])
    summary, _ = run_import(ingest_server.http_url, [path])
    assert summary.ok and summary.exit_code == 0 and summary.spans_rejected == 0


def test_server_warning_is_shown_as_a_warning_and_exit_stays_zero(ingest_server, tmp_path) -> None:
    """A partial_success with rejected 0 (an all-zero parent id stored as a root) is an OTLP warning:
    every span counts as stored, the message is shown, and it is not called a rejection."""
    emitter = Emitter()
    spec = emitter.run(RunSpec(agent="zero_parent"))
    doc = otlp_json(emitter.request())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = next(s for s in spans if not s.get("parentSpanId"))
    root["parentSpanId"] = "0" * 16
    path = tmp_path / "z.jsonl"
    path.write_text(json.dumps(doc) + "\n")

    summary, output = run_import(ingest_server.http_url, [path])
    assert summary.exit_code == 0 and summary.spans_rejected == 0, output
    assert summary.spans_accepted == summary.spans_read == len(spans)
    assert "with a warning" in output and "rejected 0" not in output
    assert "all-zero parent_span_id" in "\n".join(summary.rejections)
    assert ingest_server.store.wait_loaded(10)
    assert [r["agent"] for r in runs(ingest_server.http_url)] == ["zero_parent"]
    assert len(trace_spans(ingest_server.http_url, spec.trace_id)) == len(spans)
