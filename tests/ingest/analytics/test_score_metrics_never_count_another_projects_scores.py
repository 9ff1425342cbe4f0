"""Score metrics read scores joined to their run by (project, trace id): project A's regressions
count A's scores on A's runs only, even when project B posts judgments naming A's trace ids (a B key
may send any trace id; its scores are B's). The operator sees both projects, each run with its own
project's scores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.support.scores_http import post_scores
from tests.support.two_projects import AGENT, PER_VERSION, start_two_projects


@pytest.mark.parametrize("backend", BACKENDS)  # the same verdicts on both stores
def test_a_projects_score_metric_never_counts_another_projects_scores(start_ingest_server: Callable[..., Any]) -> None:
    world = start_two_projects(start_ingest_server)
    url, a, b = world.srv.http_url, world.traces["A"], world.traces["B"]
    mine = [{"trace_id": t, "name": "correct", "value": True} for v in ("1", "2") for t in a[v]]
    post_scores(url, mine, headers=world.headers("A"))
    theirs = [{"trace_id": t, "name": "correct", "value": False} for v in ("1", "2") for t in b[v]]
    theirs += [{"trace_id": t, "name": "correct", "value": False} for t in a["2"]]  # B judging A's runs
    post_scores(url, theirs, world.srv.store, headers=world.headers("B"))

    def finding(project: str) -> dict:
        r = httpx.get(url + "/api/regressions", params={"comparison": "release", "metrics": "score:correct"},
                      headers=world.headers(project), timeout=30)
        assert r.status_code == 200, r.text
        [f] = [f for f in r.json()["findings"] if f["agent"] == AGENT]
        return f

    f = finding("A")
    assert (f["baseline"]["n"], f["current"]["n"]) == (PER_VERSION, PER_VERSION)
    assert f["baseline"]["value"] == f["current"]["value"] == 1.0 and f["verdict"] == "no_change"
    assert f["current"]["examples"] == []  # no run of A was judged false
    f = finding("B")
    assert (f["baseline"]["n"], f["current"]["n"]) == (PER_VERSION, PER_VERSION)
    assert f["current"]["value"] == 0.0
    assert not set(f["current"]["examples"]) & set(a["2"])
    f = finding("ops")  # both projects' runs, each with its own project's scores
    assert (f["baseline"]["n"], f["current"]["n"]) == (2 * PER_VERSION, 2 * PER_VERSION)
    assert f["current"]["value"] == 0.5 and f["baseline"]["value"] == 0.5
