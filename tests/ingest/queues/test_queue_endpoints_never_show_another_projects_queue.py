"""Queues are per project: two projects with a queue of the same name each see only their own
runs, items, labels and results; a key asking for the other project (`?project=`) gets 404 on every
queue endpoint, and only the operator key reads both."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter
from tests.ingest.queues.harness import Api, emit_runs

KEYS = {"admin_a": ("A", ["admin"]), "admin_b": ("B", ["admin"]), "read_a": ("A", ["read"]),
        "annotate_a": ("A", ["annotate"]), "operator": ("ops", ["operator"])}
SECRET = {n: f"{n}-secret-0123456789abcdef" for n in KEYS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_named_queues_of_two_projects_never_mix(queue_server) -> None:
    srv = queue_server(api_keys=[ApiKey(key=SECRET[n], project=p, scopes=s)  # type: ignore[arg-type]
                                 for n, (p, s) in KEYS.items()])
    api = {n: Api(srv.http_url, SECRET[n]) for n in KEYS}
    runs = {}
    for project, admin in (("A", api["admin_a"]), ("B", api["admin_b"])):
        emitter = Emitter()
        runs[project] = {r.trace_id for r in emit_runs(emitter, 6, agent=f"agent_{project}")}
        admin.send(emitter)
    assert srv.store.wait_loaded(60)  # stored before the queues exist: they enter by backfill only
    for admin in (api["admin_a"], api["admin_b"]):
        admin.create("review")
    for admin in (api["admin_a"], api["admin_b"]):
        assert admin.ok("POST", "/api/queues/review/backfill",
                        json={"since": (T0 - timedelta(days=1)).isoformat()})["added"] == 6

    a = api["annotate_a"]
    item = a.ok("GET", "/api/queues/review/next", params={"user": "ann"})["item"]
    assert item["trace_id"] in runs["A"]
    a.ok("POST", f"/api/queues/review/items/{item['trace_id']}/submit", json={"user": "ann", "scores": {"correct": True}})
    b_run = sorted(runs["B"])[0]
    assert a.call("POST", f"/api/queues/review/items/{b_run}/submit",
                  json={"user": "ann", "scores": {"correct": True}}).status_code == 404, "B's run in A's queue"

    assert {i["trace_id"] for i in api["read_a"].items("review")} == runs["A"]
    assert [q["project"] for q in api["read_a"].ok("GET", "/api/queues")["queues"]] == ["A"]
    assert set(api["read_a"].ok("GET", "/api/queues/review/results")["labels"]) == {item["trace_id"]}
    assert api["admin_b"].ok("GET", "/api/queues/review/results")["labels"] == {}

    for key in ("read_a", "annotate_a", "admin_a"):
        for method, path, kw in (
            ("GET", "/api/queues/review", {}),
            ("GET", "/api/queues/review/items", {}),
            ("GET", "/api/queues/review/results", {}),
            ("GET", "/api/queues/review/next", {"params": {"user": "ann"}}),
            ("POST", f"/api/queues/review/items/{b_run}/submit", {"json": {"user": "ann", "scores": {"correct": True}}}),
            ("POST", f"/api/queues/review/items/{b_run}/skip", {"json": {"user": "ann"}}),
            ("POST", "/api/queues/review/backfill", {"json": {"since": T0.isoformat()}}),
            ("PUT", "/api/queues/review", {"json": {"name": "review", "score_configs": ["correct"]}}),
            ("DELETE", "/api/queues/review", {}),
        ):
            r = api[key].call(method, path, params={**kw.pop("params", {}), "project": "B"}, **kw)
            # 403 where the key lacks the route's scope (annotate_a reading), else 404: B is not visible
            assert r.status_code in (403, 404), f"{key} {method} {path}: {r.status_code} {r.text[:200]}"
            assert "agent_B" not in r.text and not any(t in r.text for t in runs["B"] - {b_run})
        if key != "annotate_a":
            assert api[key].ok("GET", "/api/queues", params={"project": "B"}) == {"queues": []}

    both = api["operator"].ok("GET", "/api/queues")["queues"]
    assert sorted(q["project"] for q in both) == ["A", "B"]
    assert {i["trace_id"] for i in api["operator"].items("review", project="B")} == runs["B"]
    assert api["admin_b"].ok("GET", "/api/queues/review")["progress"]["done"] == 0
