"""`/api/sessions` and `/api/graph` accept the same `filter=` expression as `/api/runs`, with the same
meaning, and refuse a bad one with the same 400.

The failure this covers: the agent graph and the sessions list were "over the filtered runs" only for
the structured filters (agent, version, time), so "the graph of runs that called the refund tool"
or "conversations with a run that hit max_steps" could not be asked, although /api/runs answered it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec

# every test here runs once per store: the answers must be the same on both
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

WINDOW = {"since": (T0 - timedelta(days=1)).isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}


def test_sessions_with_a_matching_run_keep_every_turn_in_their_totals(server: Any) -> None:
    emitter = Emitter()
    conv1 = [emitter.run(RunSpec(start=T0 + timedelta(minutes=i), steps=i + 1, conversation="conv-1", user="u1",
                                 ok=i != 1, stop_reason="finish" if i != 1 else "max_steps"))
             for i in range(3)]  # fmt: skip
    emitter.run(RunSpec(start=T0 + timedelta(minutes=10), conversation="conv-2", user="u2"))
    server.send(emitter.request())
    want = {"since": WINDOW["since"], "until": WINDOW["until"]}
    assert {r["trace_id"] for r in server.get("/api/runs", filter='stop_reason = "max_steps"', **want).json()["runs"]} \
        == {conv1[1].trace_id}
    page = server.get("/api/sessions", filter='stop_reason = "max_steps"', **want).json()
    assert [s["session_id"] for s in page["sessions"]] == ["conv-1"]
    assert page["sessions"][0]["runs"] == 3 and page["sessions"][0]["steps"] == 1 + 2 + 3
    assert {s["session_id"] for s in server.get("/api/sessions", **want).json()["sessions"]} == {"conv-1", "conv-2"}
    assert server.get("/api/sessions", filter="steps > 100", **want).json()["sessions"] == []
    bad = server.get("/api/sessions", filter="steps >> 1", **want)
    assert bad.status_code == 400 and "^" in bad.text


def test_graph_of_the_runs_matching_a_span_attribute(server: Any) -> None:
    emitter = Emitter()
    failing = emitter.run(RunSpec(agent="billing", steps=3, failing_tools=2))
    emitter.run(RunSpec(agent="support_agent", steps=2))
    server.send(emitter.request())
    everything = server.get("/api/graph", **WINDOW).json()
    assert {n["id"] for n in everything["nodes"] if n["kind"] == "agent"} == {"agent:billing", "agent:support_agent"}
    graph = server.get("/api/graph", filter='status = "ERROR"', **WINDOW).json()
    assert graph["runs_matched"] == 1
    assert {n["id"] for n in graph["nodes"] if n["kind"] == "agent"} == {"agent:billing"}
    tool = next(e for e in graph["edges"] if e["target"] == "tool:lookup")
    assert (tool["calls"], tool["errors"]) == (3, 2)
    assert failing.trace_id in tool["example_traces"]
    bad = server.get("/api/graph", filter='attributes["x" = 1', **WINDOW)
    assert bad.status_code == 400
