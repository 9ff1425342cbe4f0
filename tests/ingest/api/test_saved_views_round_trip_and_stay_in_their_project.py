"""Saved views (`/api/views`): created, listed, read, replaced and deleted on the real server, kept across a
restart, restoring the page's query parameters, unique by name in a project, and never visible to or
changeable by another project's key.

The failure this covers: a useful filter + time range lived only in one browser's URL bar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS

A, B = "views-key-a-0123456789", "views-key-b-0123456789"


def _call(srv: Any, method: str, path: str, key: str | None, **kw: Any) -> httpx.Response:
    return httpx.request(method, srv.http_url + path, headers={"x-api-key": key} if key else {}, timeout=30, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_round_trip_isolated_per_project(
    start_ingest_server: Callable[..., Any], tmp_path: Any, backend: str
) -> None:
    keys = [ApiKey(key=A, project="A", scopes=["read"]), ApiKey(key=B, project="B", scopes=["read"])]
    srv = start_ingest_server(grpc_port=0, api_keys=keys, db=tmp_path / "views.duckdb", store=backend)
    body = {"name": "failing refunds", "page": "runs", "filter": 'attributes["gen_ai.tool.name"] = "refund"',
            "since": "7d", "params": {"agent": "support", "mode": "live,eval"}}
    made = _call(srv, "POST", "/api/views", A, json=body)
    assert made.status_code == 201, made.text
    view = made.json()
    assert view["project"] == "A" and view["since"] == "7d" and view["until"] is None
    assert view["state"] == {"agent": "support", "mode": "live,eval", "filter": body["filter"], "since": "7d"}

    assert _call(srv, "POST", "/api/views", A, json=body).status_code == 409  # same name in the project
    assert _call(srv, "POST", "/api/views", B, json=body).status_code == 201  # another project may use it
    assert _call(srv, "POST", "/api/views", A, json={**body, "name": "x", "since": "yesterday"}).status_code == 422
    assert _call(srv, "POST", "/api/views", A, json={**body, "name": "y", "page": "../etc"}).status_code == 422
    assert _call(srv, "POST", "/api/views", A, json={**body, "name": "z", "project": "B"}).status_code == 403
    assert _call(srv, "POST", "/api/views", None, json=body).status_code == 401

    listed = _call(srv, "GET", "/api/views", A).json()["views"]
    assert [(v["view_id"], v["name"]) for v in listed] == [(view["view_id"], "failing refunds")]
    assert _call(srv, "GET", "/api/views", A, params={"page": "sessions"}).json()["views"] == []
    assert _call(srv, "GET", f"/api/views/{view['view_id']}", A).json() == view

    # B never reads, replaces or deletes A's view; its own list holds only its own
    vid = view["view_id"]
    assert _call(srv, "GET", f"/api/views/{vid}", B).status_code == 404
    assert _call(srv, "PUT", f"/api/views/{vid}", B, json={**body, "name": "stolen"}).status_code == 404
    assert _call(srv, "DELETE", f"/api/views/{vid}", B).status_code == 404
    assert [v["project"] for v in _call(srv, "GET", "/api/views", B).json()["views"]] == ["B"]
    assert _call(srv, "GET", "/api/views", A, params={"project": "B"}).json()["views"] == []

    replaced = _call(srv, "PUT", f"/api/views/{vid}", A,
                     json={"name": "all refunds", "page": "search", "filter": "refund", "params": {}})
    assert replaced.status_code == 200, replaced.text
    got = replaced.json()
    assert (got["view_id"], got["name"], got["page"], got["since"], got["state"]) == \
        (vid, "all refunds", "search", None, {"filter": "refund"})
    assert got["created_at"] == view["created_at"] and got["updated_at"] >= view["updated_at"]

    srv.store.stop()  # saved server-side: a restart keeps it
    srv.store.start()
    assert _call(srv, "GET", f"/api/views/{vid}", A).json()["name"] == "all refunds"
    assert _call(srv, "DELETE", f"/api/views/{vid}", A).status_code == 204
    assert _call(srv, "GET", f"/api/views/{vid}", A).status_code == 404
    assert _call(srv, "DELETE", f"/api/views/{vid}", A).status_code == 404
