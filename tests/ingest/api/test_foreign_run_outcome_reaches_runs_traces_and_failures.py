"""A foreign client's run outcome, as the rules of design.md §3 derive it, is what /api/runs,
/api/traces and /api/failures answer: stop_reason_source, failure evidence, agents and sub-agents;
a trace that only builds an agent is no run on the listings but still opens as a trace."""

from __future__ import annotations

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store import foreign_runs as f
from tests.ingest.store.otlp_build import agent_run, request

WINDOW = {"since": "2025-12-31T00:00:00Z", "until": "2026-01-02T00:00:00Z"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_foreign_runs_on_every_endpoint(server) -> None:
    failed = f.genai_agent(agent="weather_agent", version="2.0", turns=2, last_call_fails=True)
    graph = f.langgraph_supervisor()
    built = f.create_agent_only()
    root, children = agent_run(steps=2)
    for spans in (failed, graph, built, [root, *children]):
        server.send(request(spans))

    runs = {r["trace_id"]: r for r in server.get("/api/runs", **WINDOW).json()["runs"]}
    assert built[0].trace_id not in runs  # not a run
    assert set(runs) == {failed[0].trace_id, graph[0].trace_id, root.trace_id}

    bad = runs[failed[0].trace_id]
    assert (bad["agent"], bad["version"], bad["ok"], bad["stop_reason"], bad["stop_reason_source"], bad["steps"]) == (
        "weather_agent", "2.0", False, "llm_unavailable", "inferred", 2)
    assert bad["failure_evidence"] == "InternalServerError: Error code: 500 - internal error"
    assert runs[root.trace_id]["stop_reason_source"] == "reported"
    assert runs[graph[0].trace_id]["sub_agents"] == ["researcher"]  # the run is supervisor's

    trace = server.get(f"/api/traces/{graph[0].trace_id}").json()
    agents = trace["run"]["agents"]
    assert [(a["kind"], a["agent"], a["llm_calls"], a["tool_calls"], a["steps"]) for a in agents] == [
        ("workflow", "LangGraph", 0, 0, 0), ("agent", "supervisor", 2, 0, 2), ("agent", "researcher", 2, 1, 2)]
    assert agents[2]["parent_span_id"] == agents[1]["span_id"] and agents[1]["parent_span_id"] == agents[0]["span_id"]
    assert trace["run"]["agent"] == "supervisor" and trace["run"]["name"] == "LangGraph"
    assert trace["run"]["stop_reason"] == "finish"
    assert server.get(f"/api/traces/{built[0].trace_id}").status_code == 200

    failures = server.get("/api/failures", **WINDOW).json()
    assert failures["total_failed"] == 1
    (cluster,) = failures["clusters"]
    assert (cluster["stop_reason"], cluster["examples"]) == ("llm_unavailable", [failed[0].trace_id])
    assert cluster["signature"] == "llm InternalServerError: Error code: <num>"

    only_failed = server.get("/api/runs", ok="false", stop_reason="llm_unavailable", **WINDOW).json()["runs"]
    assert [r["trace_id"] for r in only_failed] == [failed[0].trace_id]
