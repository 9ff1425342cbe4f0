"""A trace whose analytics upkeep alone runs DuckDB out of memory is set aside, never holding the rest back.

The failure this covers: a body of 32 spans with 1 MiB attributes each (inside every documented limit)
made every analytics upkeep pass fail with "Out of Memory Error" under the default memory limit; out of
memory is environmental, so the pass was retried every second, forever, and no trace of any project got
its run outcome, tool stats or cost by model again (`wait_loaded` never returned). A pass that keeps
failing that way is now split like a poison one: the trace that fails alone is set aside and retried
with backoff; everything else is upkept.

Real parts: the full server on a real DuckDB with the default memory limit, real OTLP bodies.

DuckDB only: DuckDB's upkeep memory limit.
"""

from __future__ import annotations

import os

import httpx

from tests.ingest.receiver.test_big_spans_cut_to_limits_not_dead_lettered import MIB, _body, _post, _span
from tests.ingest.store.otlp_build import S, new_trace_id, request
from tracer import conventions as c


def test_memory_exhausting_trace_set_aside_while_another_projects_runs_are_derived(start_ingest_server) -> None:
    server = start_ingest_server()
    heavy = os.urandom(16)
    root_id, root = _span(heavy, "heavy-root")
    # attributes that every agent-naming rule of the run derivation has to parse: 1 MiB JSON each
    spans = [root] + [
        _span(heavy, f"agent{i}", root_id, attrs={c.OI_SPAN_KIND: "AGENT", "blob": c.LANGCHAIN_AGENT_NAME_KEY + "y" * MIB})[1]
        for i in range(31)
    ]
    _post(server.http_url, _body(spans))
    light = S(new_trace_id(), "invoke_agent light", attrs={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
                                                          c.GEN_AI_AGENT_NAME: "light"}, error=True)
    r = httpx.post(server.http_url + "/v1/traces", content=request([light]).SerializeToString(),
                   headers={"content-type": "application/x-protobuf"}, timeout=60)
    assert r.status_code == 200
    assert server.store.wait_loaded(180), "upkeep never caught up: one trace held every other one back"
    runs = httpx.get(server.http_url + "/api/runs", params={"since": "1970-01-01T00:00:00Z", "limit": 50}).json()["runs"]
    by_agent = {run["agent"]: run for run in runs}
    # the light run got its outcome derived (an ERROR root: ok false, inferred), which only an upkeep pass does
    assert by_agent["light"]["ok"] is False and by_agent["light"]["stop_reason_source"] == "inferred"
    heavy_trace = httpx.get(f"{server.http_url}/api/traces/{heavy.hex()}", timeout=60)
    assert heavy_trace.status_code == 200 and len(heavy_trace.json()["spans"]) == 32  # stored, queryable
    stats = server.store.stats()
    assert stats.records_dead_lettered == 0
    assert stats.upkeep_traces_set_aside == 1  # the heavy trace waits for its retry, alone
