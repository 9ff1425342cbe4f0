"""GET /api/traces/{id}: spans in tree order (parents first, siblings by start), 404 and 400."""

from __future__ import annotations

import os

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tracer import conventions as c


@pytest.mark.parametrize("backend", BACKENDS)
def test_spans_come_parents_first_siblings_by_start_with_depth_and_children(server):
    emitter = Emitter()
    spec = emitter.run(RunSpec(steps=2, failing_tools=1))
    server.send(emitter.request())
    r = server.get(f"/api/traces/{spec.trace_id}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["trace_id"] == spec.trace_id
    assert body["run"]["trace_id"] == spec.trace_id and body["run"]["tool_errors"] == 1
    spans = body["spans"]
    names = [(s["depth"], s["name"]) for s in spans]
    assert names == [
        (0, "invoke_agent support_agent"),
        (1, "step 0"),
        (2, "chat gpt-4o-mini"),
        (2, "execute_tool lookup"),
        (1, "step 1"),
        (2, "chat gpt-4o-mini"),
        (2, "execute_tool lookup"),
    ]
    by_id = {s["span_id"]: s for s in spans}
    for s in spans:
        assert s["children"] == [k for k in s["children"] if by_id[k]["parent_span_id"] == s["span_id"]]
    root = spans[0]
    assert root["parent_span_id"] is None and root["operation"] == "agent"
    assert [by_id[k]["name"] for k in root["children"]] == ["step 0", "step 1"]

    chat, tool = spans[2], spans[3]
    assert chat["kind"] == "CLIENT" and chat["operation"] == "llm"
    assert (chat["model"], chat["provider"], chat["input_tokens"], chat["output_tokens"]) == (
        "gpt-4o-mini", "openai", 100, 20,
    )
    assert chat["attributes"][c.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert isinstance(chat["events"], list)
    assert (tool["status"], tool["status_message"], tool["error_type"], tool["tool_name"]) == (
        "ERROR", "tool timed out", "timeout", "lookup",
    )
    assert spans[6]["status"] == "UNSET" and spans[6]["error_type"] is None
    assert all(s["start_time"].endswith("Z") for s in spans)


@pytest.mark.parametrize("backend", BACKENDS)
def test_orphans_and_parent_cycles_are_shown_once_never_hidden(server):
    emitter = Emitter()
    spec = emitter.run(RunSpec(steps=2))
    request = emitter.request()
    spans = request.resource_spans[0].scope_spans[0].spans
    steps = [s for s in spans if s.name.startswith("step ")]
    steps[0].parent_span_id = os.urandom(8)  # its parent never arrives
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    chats[1].parent_span_id, tools[1].parent_span_id = tools[1].span_id, chats[1].span_id  # a 2-cycle
    server.send(request)
    body = server.get(f"/api/traces/{spec.trace_id}").json()
    got = body["spans"]
    assert len(got) == 7 and len({s["span_id"] for s in got}) == 7
    roots = [s["name"] for s in got if s["depth"] == 0]
    assert roots[:2] == ["invoke_agent support_agent", "step 0"]  # the orphan becomes a root, by start
    assert len(roots) == 3  # plus one entry point into the cycle


@pytest.mark.parametrize("backend", BACKENDS)
def test_unknown_trace_is_404_and_malformed_id_is_400(server):
    emitter = Emitter()
    emitter.run(RunSpec())
    server.send(emitter.request())
    r = server.get(f"/api/traces/{os.urandom(16).hex()}")
    assert r.status_code == 404 and "not found" in r.json()["detail"]
    for bad in ["abc", "g" * 32, "0" * 31, "0" * 33, "%27%20OR%201%3D1%20--" + "0" * 16]:
        r = server.get(f"/api/traces/{bad}")
        assert r.status_code == 400, (bad, r.status_code, r.text)
        assert "32 hexadecimal" in r.json()["detail"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_uppercase_trace_id_finds_the_trace(server):
    emitter = Emitter()
    spec = emitter.run(RunSpec())
    server.send(emitter.request())
    r = server.get(f"/api/traces/{spec.trace_id.upper()}")
    assert r.status_code == 200 and r.json()["trace_id"] == spec.trace_id
