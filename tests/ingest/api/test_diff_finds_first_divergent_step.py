"""The step-aligned diff names the first step where two runs differ (action, arguments or
observation, in that order), shows every aligned step, and reports b - a deltas."""

from __future__ import annotations

import pytest

from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import BACKENDS

# every test here runs once per store: the answers must be the same on both
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def steps(second_args: dict, third_obs: str, extra: bool = False) -> list[Step]:
    out = [
        Step(chats=[Chat(cost=0.01)], tools=[Tool("search", {"q": "refund policy", "k": 3}, "r")], observation="3 hits"),
        Step(chats=[Chat(cost=0.01)], tools=[Tool("fetch", second_args, "doc")], observation="doc text"),
        Step(chats=[Chat(cost=0.01)], tools=[Tool("summarize", {"n": 1}, "s")], observation=third_obs),
        Step(chats=[Chat(cost=0.01)]),
    ]
    if extra:
        out.insert(3, Step(chats=[Chat(cost=0.02)], tools=[Tool("search", {"q": "again"}, "r")]))
    return out


@pytest.fixture
def runs(server):
    emitter = RunEmitter()
    a = emitter.run(Run(agent="support", steps=steps({"url": "u1", "lang": "en"}, "summary A")))
    same_as_a = emitter.run(Run(agent="support", steps=steps({"lang": "en", "url": "u1"}, "summary A")))
    b = emitter.run(Run(agent="support", version="2.0", steps=steps({"url": "u2", "lang": "en"}, "summary B", extra=True)))
    c = emitter.run(Run(agent="support", steps=steps({"url": "u1", "lang": "en"}, "summary C")))
    server.send(emitter.request())
    return a, same_as_a, b, c


def test_first_divergence_is_the_arguments_of_step_1(server, runs):
    a, _, b, _ = runs
    r = server.get("/api/diff", a=a.trace_id, b=b.trace_id)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["first_divergence"] == {
        "step": 1, "field": "arguments", "a": {"url": "u1", "lang": "en"}, "b": {"url": "u2", "lang": "en"}
    }  # fmt: skip
    assert [s["index"] for s in body["steps"]] == [0, 1, 2, 3, 4]
    assert [s["same"] for s in body["steps"]] == [True, False, False, False, False]
    assert body["steps"][0]["a"] == {"action": "search", "arguments": {"q": "refund policy", "k": 3}, "observation": "3 hits"}
    assert body["steps"][4]["a"] is None and body["steps"][4]["b"]["action"] == "finish"
    assert body["delta"]["steps"] == 1
    assert body["delta"]["input_tokens"] == 100 and body["delta"]["output_tokens"] == 10
    assert body["delta"]["cost_usd"] == pytest.approx(0.02)
    assert (body["a"]["trace_id"], body["b"]["trace_id"]) == (a.trace_id, b.trace_id)


def test_observation_divergence_and_identical_runs(server, runs):
    a, same_as_a, _, c = runs
    body = server.get("/api/diff", a=a.trace_id, b=c.trace_id).json()
    assert body["first_divergence"] == {"step": 2, "field": "observation", "a": "summary A", "b": "summary C"}
    same = server.get("/api/diff", a=a.trace_id, b=same_as_a.trace_id).json()
    assert same["first_divergence"] is None  # argument key order is not a difference
    assert all(s["same"] for s in same["steps"]) and same["delta"]["steps"] == 0


def test_unknown_or_malformed_trace_ids(server, runs):
    a = runs[0]
    assert server.get("/api/diff", a=a.trace_id, b="0" * 32).status_code == 404
    assert server.get("/api/diff", a="xyz", b=a.trace_id).status_code == 400
    assert server.get("/api/diff", a=a.trace_id).status_code == 422
