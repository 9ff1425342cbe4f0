"""Two people label the same runs (labels_per_item = 2): each gets every run once, never one they
decided, and the results give percent agreement and Cohen's kappa. The labels follow the worked
example of Cohen's kappa (50 items: 20 both yes, 15 both no, 5 and 10 split), whose agreement is
0.7 and kappa 0.4; a non-assignee is refused."""

from __future__ import annotations

import pytest

from ingest.queues.agreement import cohen_kappa
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.queues.harness import Api, emit_runs, settle

# (alice, bob) per run, in the runs' order
PLAN = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_raters_agreement_and_kappa_from_their_labels(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    api.create("pairs", score_configs=["correct", "tone"], labels_per_item=2, assignees=["alice", "bob"])
    emitter = Emitter()
    runs = emit_runs(emitter, len(PLAN))
    api.send(emitter)
    assert settle(api, "pairs", srv.store) == len(PLAN)
    plan = {r.trace_id: p for r, p in zip(runs, PLAN, strict=True)}

    assert api.call("GET", "/api/queues/pairs/next", params={"user": "mallory"}).status_code == 403
    seen: dict[str, list[str]] = {"alice": [], "bob": []}
    for turn in range(len(PLAN)):
        for who, index in (("alice", 0), ("bob", 1)):
            item = api.ok("GET", "/api/queues/pairs/next", params={"user": who})["item"]
            assert item is not None, f"{who} ran out at turn {turn}"
            tid = item["trace_id"]
            seen[who].append(tid)
            values = {"correct": plan[tid][index]}
            if who == "alice" and turn < 3:
                values["tone"] = "polite"
            api.ok("POST", f"/api/queues/pairs/items/{tid}/submit", json={"user": who, "scores": values})
    for who in seen:
        assert sorted(seen[who]) == sorted(plan), f"{who} did not get every run exactly once"
        assert api.ok("GET", "/api/queues/pairs/next", params={"user": who})["item"] is None

    results = api.ok("GET", "/api/queues/pairs/results")
    assert results["progress"]["done"] == len(PLAN)
    assert results["labelled_by"] == {"alice": len(PLAN), "bob": len(PLAN)}
    by_config = {c["name"]: c for c in results["agreement"]}
    correct = by_config["correct"]
    assert correct["runs_with_several_labels"] == len(PLAN) and correct["pairs"] == len(PLAN)
    assert correct["percent_agreement"] == pytest.approx(0.7)
    (pair,) = correct["raters"]
    assert pair["raters"] == ["alice", "bob"] and pair["runs"] == len(PLAN)
    assert pair["kappa"] == pytest.approx(0.4)
    tone = by_config["tone"]
    assert tone["runs_with_several_labels"] == 0 and tone["percent_agreement"] is None and tone["raters"] == []
    some = next(iter(plan))
    assert results["labels"][some] == {"alice": {"correct": plan[some][0], **results["labels"][some]["alice"]},
                                       "bob": {"correct": plan[some][1]}}


def test_kappa_is_undefined_when_chance_agreement_is_certain() -> None:
    assert cohen_kappa(["a", "a", "a"], ["a", "a", "a"]) is None
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([3, 4.0], [3.0, 4]) == pytest.approx(1.0)
