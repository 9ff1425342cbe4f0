"""The captured OTLP/HTTP protobuf body imports as what its README documents: 7 spans in 2 runs."""

from __future__ import annotations

from tests.ingest.importer.collector_files import FIXTURE, run_import, runs, stored_span_count


def test_fixture_bin_import_is_queryable(ingest_server) -> None:
    summary, output = run_import(ingest_server.http_url, [FIXTURE])
    assert summary.fatal is None, output
    assert (summary.files, summary.records, summary.requests) == (1, 1, 1)
    assert (summary.spans_read, summary.spans_accepted, summary.spans_rejected) == (7, 7, 0)
    assert summary.exit_code == 0
    assert ingest_server.store.wait_loaded(10)
    stored = runs(ingest_server.http_url)
    assert len(stored) == 2
    assert {r["agent"] for r in stored} >= {"weather_agent"}
    assert stored_span_count(ingest_server.http_url) == 7
