"""With API keys, a key bound to project A never sees project B, whatever the parameters say."""

from __future__ import annotations

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec

KEY_A, KEY_B, KEY_ADMIN, KEY_INGEST = "key-a-0123456789", "key-b-0123456789", "key-admin-012345", "key-i-0123456789"


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_isolation(make_server, monkeypatch):
    monkeypatch.setenv("H8_KEY_A", KEY_A)
    server = make_server(
        api_keys=[
            ApiKey(key_env="H8_KEY_A", project="A"),
            ApiKey(key=KEY_B, project="B"),
            ApiKey(key=KEY_ADMIN, project="ops", scopes=["operator"]),
            ApiKey(key=KEY_INGEST, project="A", scopes=["ingest"]),
        ]
    )
    emitter = Emitter()
    run_a = emitter.run(RunSpec(agent="agent_a"))
    server.send(emitter.request(), key=KEY_A)
    run_b = emitter.run(RunSpec(agent="agent_b"))
    server.send(emitter.request(), key=KEY_B)

    def ids(key, **params):
        r = server.get("/api/runs", key=key, **params)
        assert r.status_code == 200, r.text
        return {run["trace_id"] for run in r.json()["runs"]}

    assert ids(KEY_A) == {run_a.trace_id}
    assert ids(KEY_B) == {run_b.trace_id}
    assert ids(KEY_A, project="B") == set()  # a parameter narrows, never widens
    assert ids(KEY_A, project="A") == {run_a.trace_id}
    assert ids(KEY_A, agent="agent_b") == set()
    assert ids(KEY_ADMIN) == {run_a.trace_id, run_b.trace_id}
    assert ids(KEY_ADMIN, project="B") == {run_b.trace_id}

    assert server.get(f"/api/traces/{run_a.trace_id}", key=KEY_A).status_code == 200
    other = server.get(f"/api/traces/{run_b.trace_id}", key=KEY_A)
    unknown = server.get(f"/api/traces/{'ab' * 16}", key=KEY_A)
    assert other.status_code == unknown.status_code == 404
    assert other.json()["detail"].replace(run_b.trace_id, "X") == unknown.json()["detail"].replace("ab" * 16, "X")
    assert server.get(f"/api/traces/{run_b.trace_id}", key=KEY_ADMIN).status_code == 200

    window = {"since": "2025-03-01T00:00:00Z", "until": "2025-03-02T00:00:00Z"}
    assert server.get("/api/overview", key=KEY_A, **window).json()["totals"]["runs"] == 1
    assert server.get("/api/overview", key=KEY_A, project="B", **window).json()["totals"]["runs"] == 0
    assert server.get("/api/overview", key=KEY_ADMIN, **window).json()["totals"]["runs"] == 2

    assert server.get("/api/runs").status_code == 401
    assert server.get("/api/runs", key="wrong-key-000000").status_code == 401
    assert server.get("/api/runs", key=KEY_INGEST).status_code == 403  # no read scope
