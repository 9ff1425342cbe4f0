"""The agent graph of captured framework runs has exactly the edges their manifests describe: an OpenAI
Agents SDK handoff (weather_agent -> forecast_writer, siblings under the workflow), a LangChain
agent-as-tool (weather_agent -> tool write_forecast -> agent forecast_writer), each tool and model call
once, failures where the manifest says the call failed; and the graph over all runs sums them.

The failure this covers: "which agent hands off to which" was only answerable by reading every trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec

# every test here runs once per store: the answers must be the same on both
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
ALL_TIME = {"since": "2000-01-01T00:00:00Z"}


def _replay(server: Any, name: str) -> dict[str, str]:
    spec = json.loads((FIXTURES / name / "manifest.json").read_text())
    for body in spec["bodies"]:
        headers = {"Content-Type": body["content_type"]}
        with server.client() as client:
            r = client.post(body["path"], content=(FIXTURES / name / body["file"]).read_bytes(), headers=headers)
        assert r.status_code == 200, r.text
    assert server.store.wait_loaded(60)
    return {run["scenario"]: run["trace_id"] for run in spec["runs"]}


def _edges(graph: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    return {(e["source"], e["target"]): (e["calls"], e["errors"]) for e in graph["edges"]}


def test_openai_agents_handoff_and_langchain_agent_as_tool(server: Any) -> None:
    openai = _replay(server, "openai_agents_openinference")
    langchain = _replay(server, "langchain_agent_openinference")

    # manifest tool_error: turn 1 get_weather + get_time (raises), turn 2 the handoff, turn 3 forecast_writer
    # answers; 3 LLM calls of gpt-4o-mini, 2 by weather_agent and 1 by forecast_writer.
    handoff = server.get(f"/api/traces/{openai['tool_error']}/graph").json()
    assert _edges(handoff) == {
        ("agent:weather_agent", "tool:get_weather"): (1, 0),
        ("agent:weather_agent", "tool:get_time"): (1, 1),
        ("agent:weather_agent", "llm:gpt-4o-mini"): (2, 0),
        ("agent:weather_agent", "agent:forecast_writer"): (1, 0),
        ("agent:forecast_writer", "llm:gpt-4o-mini"): (1, 0),
    }
    # manifest sub_agent: turn 1 both tools (get_time raises), turn 2 write_forecast runs forecast_writer
    # (its own model call), turn 3 weather_agent answers: 4 LLM calls, 3 tool calls.
    as_tool = server.get(f"/api/traces/{langchain['sub_agent']}/graph").json()
    assert _edges(as_tool) == {
        ("agent:weather_agent", "tool:get_weather"): (1, 0),
        ("agent:weather_agent", "tool:get_time"): (1, 1),
        ("agent:weather_agent", "tool:write_forecast"): (1, 0),
        ("tool:write_forecast", "agent:forecast_writer"): (1, 0),
        ("agent:weather_agent", "llm:gpt-4o-mini"): (3, 0),
        ("agent:forecast_writer", "llm:gpt-4o-mini"): (1, 0),
    }
    edge = {(e["source"], e["target"]): e for e in as_tool["edges"]}
    run = server.get(f"/api/traces/{langchain['sub_agent']}").json()["run"]
    sub = next(a for a in run["agents"] if a["agent"] == "forecast_writer")
    # the tool's cost is what the agent under it spent; the whole run's cost is split over its edges
    assert edge[("tool:write_forecast", "agent:forecast_writer")]["cost_usd"] == sub["cost_usd"]
    assert edge[("agent:weather_agent", "tool:write_forecast")]["cost_usd"] == sub["cost_usd"]
    model_cost = sum(e["cost_usd"] for e in as_tool["edges"] if e["target"].startswith("llm:"))
    assert abs(model_cost - run["cost_usd"]) < 1e-12
    assert edge[("agent:weather_agent", "llm:gpt-4o-mini")]["input_tokens"] + \
        edge[("agent:forecast_writer", "llm:gpt-4o-mini")]["input_tokens"] == run["input_tokens"]
    assert edge[("agent:weather_agent", "tool:get_time")]["example_traces"] == [langchain["sub_agent"]]

    # llm_error (both frameworks): one failed call of gpt-4.1-mini and nothing else
    for ids in (openai, langchain):
        assert _edges(server.get(f"/api/traces/{ids['llm_error']}/graph").json()) == {
            ("agent:weather_agent", "llm:gpt-4.1-mini"): (1, 1)}

    whole = server.get("/api/graph", **ALL_TIME).json()
    assert whole["runs"] == whole["runs_matched"] == 7
    edges = _edges(whole)
    # turn_limit: 3 get_weather calls each; tool_error: 1 each; sub_agent: 1
    assert edges[("agent:weather_agent", "tool:get_weather")] == (3 + 3 + 1 + 1 + 1, 0)
    assert edges[("agent:weather_agent", "tool:get_time")] == (3, 3)
    assert edges[("agent:weather_agent", "agent:forecast_writer")] == (1, 0)
    assert edges[("agent:weather_agent", "llm:gpt-4.1-mini")] == (2, 2)
    nodes = {n["id"]: n for n in whole["nodes"]}
    assert nodes["agent:weather_agent"]["runs"] == 7 and nodes["tool:get_time"]["error_rate"] == 1.0
    p95 = {e["target"]: e["p95_ms"] for e in whole["edges"] if e["source"] == "agent:weather_agent"}
    assert all(v is not None and v >= 0 for v in p95.values())

    only_one = server.get("/api/graph", max_runs=1, **ALL_TIME).json()
    assert only_one["runs"] == 1 and only_one["runs_matched"] == 7
    assert server.get("/api/traces/xyz/graph").status_code == 400
    assert server.get(f"/api/traces/{'ab' * 16}/graph").status_code == 404


def test_kernel_runs_graph_and_latency_percentiles(server: Any) -> None:
    """Kernel spans: invoke_agent > step > chat / execute_tool; the step spans are not nodes."""
    emitter = Emitter()
    runs = [emitter.run(RunSpec(steps=4, failing_tools=1)), emitter.run(RunSpec(steps=2))]
    server.send(emitter.request())
    graph = server.get("/api/graph", **ALL_TIME).json()
    assert _edges(graph) == {
        ("agent:support_agent", "llm:gpt-4o-mini"): (6, 0),
        ("agent:support_agent", "tool:lookup"): (6, 1),
    }
    chat = next(e for e in graph["edges"] if e["target"] == "llm:gpt-4o-mini")
    assert abs(chat["cost_usd"] - sum(r.cost_usd for r in runs)) < 1e-12
    assert chat["input_tokens"] == sum(r.input_tokens for r in runs)
    spans = [s for r in runs for s in server.get(f"/api/traces/{r.trace_id}").json()["spans"]
             if s["operation"] == "llm"]  # fmt: skip
    durations = sorted(s["duration_ms"] for s in spans)
    pos = (len(durations) - 1) * 0.95
    want = durations[int(pos)] + (durations[min(int(pos) + 1, len(durations) - 1)] - durations[int(pos)]) * (pos - int(pos))
    assert abs(chat["p95_ms"] - want) < 1e-6


def test_graph_never_shows_another_projects_runs(make_server: Any) -> None:
    server = make_server(api_keys=[ApiKey(key="graph-key-a-0123456789", project="A"),
                                   ApiKey(key="graph-key-b-0123456789", project="B")])  # fmt: skip
    emitter = Emitter()
    emitter.run(RunSpec(agent="agent_a"))
    server.send(emitter.request(), key="graph-key-a-0123456789")
    run_b = emitter.run(RunSpec(agent="agent_b"))
    server.send(emitter.request(), key="graph-key-b-0123456789")
    for params in (ALL_TIME, {**ALL_TIME, "project": "B"}, {**ALL_TIME, "agent": "agent_b"}):
        answer = server.get("/api/graph", key="graph-key-a-0123456789", **params)
        assert answer.status_code == 200 and "agent_b" not in answer.text
    assert server.get(f"/api/traces/{run_b.trace_id}/graph", key="graph-key-a-0123456789").status_code == 404
    assert {n["id"] for n in server.get("/api/graph", key="graph-key-b-0123456789", **ALL_TIME).json()["nodes"]} \
        == {"agent:agent_b", "llm:gpt-4o-mini", "tool:lookup"}
