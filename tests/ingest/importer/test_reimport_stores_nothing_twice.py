"""Importing the same files again (an interrupted import re-run) never duplicates a span or a run."""

from __future__ import annotations

from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.importer.collector_files import FIXTURE, run_import, runs, stored_span_count, write_jsonl


def test_reimport_of_bin_and_jsonl_changes_nothing(ingest_server, tmp_path) -> None:
    api = ingest_server.http_url
    emitter = Emitter()
    requests = []
    for i in range(3):
        emitter.run(RunSpec(agent=f"agent_{i}"))
        requests.append(emitter.request())
    lines = write_jsonl(tmp_path / "traces.jsonl", requests)

    first, output = run_import(api, [FIXTURE, lines])
    assert first.ok, output
    assert ingest_server.store.wait_loaded(10)
    before_runs = sorted((r["trace_id"], r["steps"], r["llm_calls"], r["tool_calls"]) for r in runs(api))
    before_spans = stored_span_count(api)
    assert len(before_runs) == 2 + 3 and before_spans == 7 + 3 * 7

    again, output = run_import(api, [FIXTURE, lines])
    assert again.ok and again.spans_accepted == first.spans_accepted, output
    assert ingest_server.store.wait_loaded(10)
    assert sorted((r["trace_id"], r["steps"], r["llm_calls"], r["tool_calls"]) for r in runs(api)) == before_runs
    assert stored_span_count(api) == before_spans
