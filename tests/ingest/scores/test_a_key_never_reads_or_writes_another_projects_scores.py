"""Scores are confined to the key's project on every score endpoint: a key of project A writes
scores only into A (even naming B's trace), never reads B's scores (by filter, by `project=B`, by
B's trace id, by paging) and never sees B's score configs; `annotate` writes but does not read;
an `operator` key reads both.

The failure this covers: a reviewer of one team reading another team's judgments of its runs, or
an annotate key planting scores into another project's analytics."""

from __future__ import annotations

from typing import Any

import httpx

from ingest.config import ApiKey
from tests.ingest.api.otlp_runs import RunSpec
from tests.ingest.scores.conftest import get_scores, post_scores, send_runs

KEYS = {
    "admin_a": ("A", ["admin"]), "admin_b": ("B", ["admin"]), "annotate_a": ("A", ["annotate"]),
    "ingest_a": ("A", ["ingest"]), "ingest_b": ("B", ["ingest"]), "operator": ("ops", ["operator"]),
}
SECRET = {n: f"{n}-0123456789abcdef" for n in KEYS}


def test_scores_stay_in_their_project(start_ingest_server: Any) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key=SECRET[n], project=p, scopes=s)  # type: ignore[arg-type]
                                                     for n, (p, s) in KEYS.items()])
    base = srv.http_url
    run_a = send_runs(base, [RunSpec(agent="agent_a")], SECRET["ingest_a"])[0]
    run_b = send_runs(base, [RunSpec(agent="agent_b")], SECRET["ingest_b"])[0]
    assert post_scores(base, {"name": "b_only", "value": 1, "trace_id": run_b.trace_id}, SECRET["admin_b"]).status_code == 200
    # A's annotate key scores B's trace: the score is A's, B never sees it
    r = post_scores(base, {"name": "planted", "value": 1, "trace_id": run_b.trace_id}, SECRET["annotate_a"])
    assert r.status_code == 200, r.text
    assert post_scores(base, {"name": "a_own", "value": True, "trace_id": run_a.trace_id}, SECRET["annotate_a"]
                       ).status_code == 200
    assert post_scores(base, {"name": "x", "value": 1, "trace_id": run_a.trace_id}, SECRET["ingest_a"]).status_code == 403
    assert httpx.post(base + "/api/score-configs", json={"name": "b_cfg", "data_type": "boolean"},
                      headers={"x-api-key": SECRET["admin_b"]}).status_code == 200
    assert httpx.post(base + "/api/score-configs", json={"name": "a_cfg", "data_type": "boolean"},
                      headers={"x-api-key": SECRET["annotate_a"]}).status_code == 403
    assert srv.store.wait_loaded(10)

    def names(key: str, **params: Any) -> set[str]:
        return {s["name"] for s in get_scores(base, SECRET[key], **params)}

    assert names("admin_a") == {"planted", "a_own"}
    assert names("admin_a", project="B") == set()
    assert names("admin_a", trace_id=run_b.trace_id) == {"planted"}
    assert {s["project"] for s in get_scores(base, SECRET["admin_a"], limit=1)} == {"A"}
    # the planted score is A's, and it does not take B's run's agent either
    planted = get_scores(base, SECRET["admin_a"], name="planted")[0]
    assert planted["project"] == "A" and planted["agent"] is None
    assert names("admin_b") == {"b_only"}
    assert names("operator") == {"planted", "a_own", "b_only"}
    assert names("operator", project="B") == {"b_only"}
    assert httpx.get(base + "/api/scores", headers={"x-api-key": SECRET["annotate_a"]}).status_code == 403

    def configs(key: str, **params: Any) -> set[str]:
        r = httpx.get(base + "/api/score-configs", params=params, headers={"x-api-key": SECRET[key]})
        assert r.status_code == 200, r.text
        return {c["name"] for c in r.json()["configs"]}

    assert configs("admin_a") == set() and configs("admin_a", project="B") == set()
    assert configs("admin_b") == {"b_cfg"} and configs("operator", project="B") == {"b_cfg"}
    # B's config does not bind A's scores: a boolean-declared name in B is free in A
    assert post_scores(base, {"name": "b_cfg", "value": "any label", "session_id": "s"}, SECRET["admin_a"]
                       ).status_code == 200
    assert post_scores(base, {"name": "b_cfg", "value": "any label", "session_id": "s"}, SECRET["admin_b"]
                       ).status_code == 422
