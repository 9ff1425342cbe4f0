"""Over each storage backend, every read endpoint answers (200) or, for a query the backend does not
have yet, 501 "not available on the <store> store yet": never a 500 from one backend's SQL sent to
the other. Spans go in as OTLP/HTTP and are stored on both."""

from __future__ import annotations

import importlib.util

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

# endpoint -> the query module its answer needs first
ENDPOINTS = {
    "/api/overview": "overview", "/api/runs": "runs", "/api/spans": "spans", "/api/tools": "tools",
    "/api/cost": "cost", "/api/failures": "failures", "/api/models": "models", "/api/sessions": "sessions",
    "/api/graph": "graph", "/api/replanning": "replanning", "/api/budget-advice": "budget_advice",
    "/api/search/status": "search",
}


def _has(backend: str, module: str) -> bool:
    package = "ingest.queries" if backend == "duckdb" else "ingest.store.clickhouse.queries"
    try:
        return importlib.util.find_spec(f"{package}.{module}") is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_endpoints_answer_or_say_not_available(server, backend: str) -> None:
    root, children = agent_run(steps=2)
    server.send(request([root, *children]))
    with server.store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [root.trace_id]).fetchone()[0] == 7
    assert server.get("/readyz").status_code == 200
    for path, module in {**ENDPOINTS, f"/api/traces/{root.trace_id}": "runs"}.items():
        r = server.get(path)
        if _has(backend, module):
            assert r.status_code == 200, (path, r.status_code, r.text)
        else:
            assert r.status_code == 501, (path, r.status_code, r.text)
            assert f"not available on the {backend} store yet" in r.text, r.text
