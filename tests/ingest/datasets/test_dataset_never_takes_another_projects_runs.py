"""A dataset is made of runs the key may read and belongs to the key's project: project A naming
B's trace ids gets them skipped as unknown, A's filter selects A's runs only, B never lists or
downloads A's dataset; the operator sees both and must say which project's when the names clash."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.support.two_projects import AGENT, start_two_projects


@pytest.mark.parametrize("backend", BACKENDS)
def test_datasets_stay_in_their_project(start_ingest_server: Callable[..., Any], backend: str) -> None:
    world = start_two_projects(functools.partial(start_ingest_server, store=backend))
    url, a, b = world.srv.http_url, world.traces["A"], world.traces["B"]

    def post(project: str, body: dict) -> dict:
        r = httpx.post(url + "/api/datasets", json=body, headers=world.headers(project), timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    named = post("A", {"name": "picked", "trace_ids": b["1"][:5]})
    assert named["cases"] == 0 and named["project"] == "A"
    assert {s["trace_id"]: s["reason"] for s in named["skipped"]} == {
        t: "no run with this trace id in your projects" for t in b["1"][:5]}
    filtered = post("A", {"name": "shared", "filter": {"agent": AGENT, "limit": 1000}})
    assert {s["trace_id"] for s in filtered["skipped"]} == set(a["1"]) | set(a["2"])  # synthetic runs have no task
    post("B", {"name": "shared", "filter": {"agent": AGENT, "limit": 10}})

    listed_b = httpx.get(url + "/api/datasets", headers=world.headers("B"), timeout=30).json()["datasets"]
    assert [(d["project"], d["name"]) for d in listed_b] == [("B", "shared")]
    assert httpx.get(url + "/api/datasets/picked", headers=world.headers("B"), timeout=30).status_code == 404
    assert httpx.get(url + "/api/datasets/shared", headers=world.headers("B"), params={"project": "A"},
                     timeout=30).status_code == 404
    assert httpx.get(url + "/api/datasets/shared", headers=world.headers("B"), timeout=30).status_code == 200
    listed_ops = httpx.get(url + "/api/datasets", headers=world.headers("ops"), timeout=30).json()["datasets"]
    assert {(d["project"], d["name"]) for d in listed_ops} == {("A", "picked"), ("A", "shared"), ("B", "shared")}
    assert httpx.get(url + "/api/datasets/shared", headers=world.headers("ops"), timeout=30).status_code == 409
    one = httpx.get(url + "/api/datasets/shared", headers=world.headers("ops"), params={"project": "A"}, timeout=30)
    assert one.status_code == 200 and one.headers["content-type"].startswith("application/x-ndjson")
