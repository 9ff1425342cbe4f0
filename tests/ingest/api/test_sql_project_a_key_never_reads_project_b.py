"""`POST /api/sql` with a project-A key reads project A only, whatever the query says; an operator
key reads every project and may narrow to one.

The failure this covers: the views are bound to the key's project by the server (CTEs it puts in
front of the query), so no WHERE clause, alias, CTE named like a view, `project` field or error
message of the query can bring back another project's row or value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import RUNS, post_sql, rows, send_runs, send_scores

KEYS = {"read_a": ("A", ["read"]), "ingest_a": ("A", ["ingest", "annotate"]), "read_b": ("B", ["read"]),
        "ingest_b": ("B", ["ingest", "annotate"]), "operator": ("ops", ["operator"])}
SECRET = {name: f"{name}-sql-secret-0123456789" for name in KEYS}


@pytest.fixture(params=BACKENDS)
def base(request: pytest.FixtureRequest, start_ingest_server: Callable[..., Any]) -> str:
    keys = [ApiKey(key=SECRET[n], project=p, scopes=s) for n, (p, s) in KEYS.items()]  # type: ignore[arg-type]
    srv = start_ingest_server(grpc_port=0, store=request.param, api_keys=keys)
    for project, prefix in (("a", "a_"), ("b", "b_secret_")):
        key = SECRET[f"ingest_{project}"]
        send_scores(srv.http_url, send_runs(srv.http_url, key, agent_prefix=prefix), key)
    assert srv.store.wait_loaded(30)
    return srv.http_url


@pytest.mark.parametrize("view", ["runs", "spans", "tool_calls", "scores"])
def test_each_view_holds_only_the_keys_project(base: str, view: str) -> None:
    assert rows(base, f"SELECT DISTINCT project FROM {view}", SECRET["read_a"]) == [["A"]]
    assert rows(base, f"SELECT DISTINCT project FROM {view}", SECRET["read_b"]) == [["B"]]
    everyone = rows(base, f"SELECT DISTINCT project FROM {view} ORDER BY 1", SECRET["operator"])
    assert everyone == [["A"], ["B"]]


def test_no_query_of_a_reaches_b(base: str) -> None:
    key = SECRET["read_a"]
    for sql in [
        "SELECT agent FROM runs WHERE project = 'B'",
        "SELECT agent FROM runs WHERE project = 'B' OR TRUE",
        "SELECT agent_name AS agent FROM spans WHERE agent_name LIKE 'b_secret_%'",
        "WITH runs AS (SELECT agent FROM runs) SELECT agent FROM runs",
        "SELECT r.agent FROM runs r JOIN tool_calls t ON t.project <> r.project",
        "SELECT agent FROM runs UNION SELECT agent FROM tool_calls",
        "SELECT r.agent FROM scores s LEFT JOIN runs r USING (trace_id)",
    ]:
        got = {row[0] for row in rows(base, sql, key)}
        assert all(a.startswith("a_") for a in got), (sql, got)
    # asking for B's project narrows A's key to nothing, never widens it
    assert rows(base, "SELECT count(*) FROM runs", key, project="B") == [[0]]
    assert rows(base, "SELECT count(*) FROM runs", key, project="A") == [[len(RUNS)]]
    # an error about a value never quotes another project's value
    failed = post_sql(base, "SELECT CAST(agent AS INTEGER) FROM spans WHERE agent IS NOT NULL", key)
    assert failed.status_code == 400 and "b_secret_" not in failed.text


def test_operator_narrows_to_one_project(base: str) -> None:
    got = rows(base, "SELECT DISTINCT agent FROM runs ORDER BY 1", SECRET["operator"], project="B")
    assert got and all(a.startswith("b_secret_") for (a,) in got)


def test_sql_needs_the_read_scope(base: str) -> None:
    assert post_sql(base, "SELECT 1", SECRET["ingest_a"]).status_code == 403
    assert post_sql(base, "SELECT 1").status_code == 401
