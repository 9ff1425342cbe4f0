"""Every captured framework run (tests/fixtures/frameworks/<scenario>/), replayed byte for byte into a
real server, gives the facts its manifest records: agent, version, steps, ok, stop reason, LLM and
tool calls, tool errors, tokens, models, cost, sub-agents and the failure's evidence, on /api/runs and
/api/traces alike; and the bodies' other traces (openlit's and OpenLLMetry's `create_agent` traces) are no
runs.

The bodies are posted as the client sent them (path, content type, encoding). Log bodies carry
message content only, not run facts, and go to the logs endpoint when the server has one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
MANIFESTS = sorted(FIXTURES.glob("*/manifest.json"))
FACTS = ("agent", "version", "ok", "stop_reason", "steps", "llm_calls", "tool_calls", "tool_errors",
         "input_tokens", "output_tokens", "models", "cost_usd", "sub_agents", "error_type")  # fmt: skip
WINDOW = {"since": "2000-01-01T00:00:00Z", "limit": 1000}

# Captures whose manifest states a fact the spans do not carry; strict, so a fix shows up as XPASS.
# Fixtures whose manifest states a fact no span carries (strict: a fix makes the mark fail, so it is removed).
KNOWN_GAPS: dict[str, str] = {}


def _params() -> list:
    return [
        pytest.param(m, id=m.parent.name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[m.parent.name]))
        if m.parent.name in KNOWN_GAPS else pytest.param(m, id=m.parent.name)
        for m in MANIFESTS
    ]  # fmt: skip


def test_fixtures_are_there() -> None:
    assert len(MANIFESTS) >= 10, f"framework manifests under {FIXTURES}: {MANIFESTS}"


def _post(server: Any, directory: Path, body: dict[str, Any]) -> None:
    headers = {"Content-Type": body["content_type"]}
    if body.get("content_encoding"):
        headers["Content-Encoding"] = body["content_encoding"]
    with server.client() as client:
        r = client.post(body["path"], content=(directory / body["file"]).read_bytes(), headers=headers)
    if body["signal"] != "traces" and r.status_code == 404:
        return  # a server without a logs endpoint: the run facts come from the traces
    assert r.status_code == 200, (body["file"], r.status_code, r.text)


def _facts(run: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """The manifest's facts as the API gives them (cost: 'priced' when positive; the error type as
    far as the failure evidence names it)."""
    got = {k: run.get(k) for k in FACTS if k in expected}
    got["models"] = sorted(run.get("models") or [])
    got["sub_agents"] = sorted(run.get("sub_agents") or [])
    cost = run.get("cost_usd")
    got["cost_usd"] = "priced" if cost is not None and cost > 0 else cost
    if "error_type" in expected:
        want = expected["error_type"]
        evidence = run.get("failure_evidence") or ""
        got["error_type"] = want if want is not None and want in evidence else (evidence.split(":")[0] or None)
        if want is None:
            got["error_type"] = None  # nothing to find: the client sent no exception class
    return got


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("manifest", _params())
def test_manifest_runs(server, manifest: Path) -> None:
    spec = json.loads(manifest.read_text())
    for body in spec["bodies"]:
        _post(server, manifest.parent, body)
    assert server.store.wait_loaded(60), "bodies acknowledged but not loaded and upkept within 60 s"

    listed = {r["trace_id"]: r for r in server.get("/api/runs", **WINDOW).json()["runs"]}
    wrong = {}
    for expected in spec["runs"]:
        want = {k: expected[k] for k in FACTS if k in expected}
        want["models"] = sorted(want.get("models") or [])
        want["sub_agents"] = sorted(want.get("sub_agents") or [])
        trace = server.get(f"/api/traces/{expected['trace_id']}")
        assert trace.status_code == 200, (expected["scenario"], trace.text)
        run = trace.json()["run"]
        got = _facts(run, want)
        if got != want:
            wrong[expected["scenario"]] = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        elif expected["trace_id"] not in listed or _facts(listed[expected["trace_id"]], want) != want:
            wrong[expected["scenario"]] = "not the same on /api/runs"
    assert wrong == {}, f"(got, manifest) per scenario: {wrong}"
    # the other traces of the bodies (building an agent: `create_agent`) are no runs
    assert sorted(listed) == sorted(r["trace_id"] for r in spec["runs"])
