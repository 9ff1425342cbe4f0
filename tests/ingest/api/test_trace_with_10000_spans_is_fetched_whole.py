"""A 10,001-span trace comes back whole and in tree order on each store (on DuckDB found through the
run's time window; ClickHouse looks it up by its ordering key)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ingest.store.backend import queries_of
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec


@pytest.mark.parametrize("backend", BACKENDS)
def test_ten_thousand_span_trace(server, backend):
    emitter = Emitter()
    for i in range(20):  # neighbours in time, so the window filter has something to skip
        emitter.run(RunSpec(start=T0 - timedelta(hours=1, minutes=i)))
    trace_id = emitter.wide_trace(5000, start=T0)
    server.send(emitter.request())

    r = server.get(f"/api/traces/{trace_id}")
    assert r.status_code == 200, r.text
    spans = r.json()["spans"]
    assert len(spans) == 10_001
    assert r.json()["run"]["span_count"] == 10_001
    assert spans[0]["depth"] == 0 and len(spans[0]["children"]) == 5000
    for i in range(5000):
        step, chat = spans[1 + 2 * i], spans[2 + 2 * i]
        assert step["name"] == f"step {i}" and step["depth"] == 1
        assert chat["parent_span_id"] == step["span_id"] and chat["depth"] == 2

    queries = queries_of(server.store)
    with server.store.read() as cur:
        [run] = queries.runs.find_runs_by_trace(cur, trace_id, None)
        found = queries.traces.trace_spans(cur, trace_id, run["project"], run["span_start"], run["span_end"],
                                           run["span_count"])
    if backend == "duckdb":
        assert found.used_window, "the windowed scan missed spans and fell back to a full scan"
    assert len(found.rows) == 10_001
