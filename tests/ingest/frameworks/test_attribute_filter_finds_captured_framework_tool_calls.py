"""A filter on a framework's own attribute key finds exactly the runs whose spans carry it, on bodies
captured from real frameworks (tests/fixtures/frameworks) replayed byte for byte: the failing `get_time`
tool of the `tool_error` scenario by `gen_ai.tool.name` (Strands, pydantic-ai) or OpenInference's
`tool.name` (OpenAI Agents, LangGraph), and the same runs by the promoted `tool_name` column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ingest.api.harness import BACKENDS
from tracer import conventions as c

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
WINDOW = {"since": "2000-01-01T00:00:00Z", "limit": 1000}
KEYS = {
    "strands": c.GEN_AI_TOOL_NAME,
    "pydantic_ai": c.GEN_AI_TOOL_NAME,
    "openai_agents_openinference": c.OI_TOOL_NAME,
    "langgraph_openinference": c.OI_TOOL_NAME,
}


def _runs(server, expression: str) -> set[str]:
    r = server.get("/api/runs", filter=expression, **WINDOW)
    assert r.status_code == 200, r.text
    return {run["trace_id"] for run in r.json()["runs"]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("framework", KEYS)
def test_attribute_filter_on_the_frameworks_own_key(server, framework):
    manifest = json.loads((FIXTURES / framework / "manifest.json").read_text())
    for body in manifest["bodies"]:
        if body["signal"] != "traces":
            continue
        with server.client() as client:
            r = client.post(body["path"], content=(FIXTURES / framework / body["file"]).read_bytes(),
                            headers={"Content-Type": body["content_type"]})
        assert r.status_code == 200, r.text
    assert server.store.wait_loaded(60)
    key = KEYS[framework]
    failing = {run["trace_id"] for run in manifest["runs"] if run["scenario"] == "tool_error"}
    with_tools = {run["trace_id"] for run in manifest["runs"] if run["tool_calls"]}
    assert failing and with_tools - failing
    assert _runs(server, f'attributes["{key}"] = "get_time"') == failing
    assert _runs(server, f'attributes["{key}"] = "get_time" and status = "ERROR"') == failing
    assert _runs(server, f'attributes["{key}"] exists') == with_tools
    assert _runs(server, f'attributes["{key}"] in ("get_time", "get_weather")') == with_tools
    assert _runs(server, 'tool_name = "get_time"') == failing
    assert _runs(server, f'not attributes["{key}"] exists') == {run["trace_id"] for run in manifest["runs"]} - with_tools
