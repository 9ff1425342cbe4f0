"""Filter values that look like SQL or LIKE wildcards match literally, nothing more, nothing less."""

from __future__ import annotations

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec

INJECTION = "' OR 1=1 --"


@pytest.mark.parametrize("backend", BACKENDS)
def test_sql_and_wildcards_are_matched_literally(server):
    emitter = Emitter()
    plain = emitter.run(RunSpec(agent="alpha", name="invoke agent alpha"))
    evil = emitter.run(RunSpec(agent=INJECTION, name="evil"))
    percent = emitter.run(RunSpec(agent="beta", name="100% done"))
    underscore = emitter.run(RunSpec(agent="gamma", name="snake_case"))
    backslash = emitter.run(RunSpec(agent="delta", name="C:\\runs"))
    server.send(emitter.request())

    def ids(**params):
        r = server.get("/api/runs", **params)
        assert r.status_code == 200, r.text
        return {run["trace_id"] for run in r.json()["runs"]}

    everything = {plain.trace_id, evil.trace_id, percent.trace_id, underscore.trace_id, backslash.trace_id}
    assert ids() == everything
    assert ids(agent=INJECTION) == {evil.trace_id}
    assert ids(q=INJECTION) == {evil.trace_id}
    assert ids(q="%") == {percent.trace_id}
    assert ids(q="_") == {underscore.trace_id}
    assert ids(q="\\") == {backslash.trace_id}
    assert ids(q="%%") == set()
    for key in ("project", "stop_reason", "model", "user", "conversation", "version", "environment"):
        assert ids(**{key: INJECTION}) == set(), key
        assert ids(**{key: "%"}) == set(), key
    assert ids(agent="%") == set()
    assert ids(agent="alph_") == set()
    r = server.get("/api/overview", agent=INJECTION, since="2025-03-01T00:00:00Z", until="2025-03-02T00:00:00Z")
    assert r.status_code == 200 and r.json()["totals"]["runs"] == 1
    r = server.get(f"/api/traces/{plain.trace_id}", project=INJECTION)
    assert r.status_code == 404
