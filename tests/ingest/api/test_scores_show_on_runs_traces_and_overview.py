"""Scores reach the run listings, the trace and the overview: each `/api/runs` row carries a
`scores` map (name -> latest value on its trace), `/api/traces/{id}` lists every score of the trace
(and its run the same map), and `/api/overview` aggregates them per name, agent, version and run
start day (mean for numeric, share true for boolean, label counts for categorical), equal to what
was sent, for the runs in range and the modes asked for only.

The failure this covers: scores stored but invisible where people look at runs, or aggregated over
runs outside the filters (another version, eval runs) so a release's figure is not its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, RunSpec
from tests.ingest.scores.conftest import post_scores, send_runs

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

DAY = timedelta(days=1)


def test_scores_on_runs_traces_and_overview(start_ingest_server: Any) -> None:
    srv = start_ingest_server(grpc_port=0)
    base = srv.http_url
    v1 = send_runs(base, [RunSpec(agent="ticket", version="1", start=T0 + timedelta(minutes=i)) for i in range(4)])
    v2 = send_runs(base, [RunSpec(agent="ticket", version="2", start=T0 + DAY + timedelta(minutes=i))
                          for i in range(3)])
    correct_v1 = [True, True, False, True]
    helpful_v1 = [0.5, 1.0, 0.25, 0.75]
    batch: list[dict[str, Any]] = []
    for run, ok, helpful in zip(v1, correct_v1, helpful_v1, strict=True):
        batch += [{"name": "correct", "value": ok, "trace_id": run.trace_id, "source": "judge"},
                  {"name": "helpfulness", "value": helpful, "trace_id": run.trace_id, "source": "human", "author": "a"}]
    labels_v2 = ["polite", "rude", "polite"]
    for run, label in zip(v2, labels_v2, strict=True):
        batch.append({"name": "tone", "value": label, "trace_id": run.trace_id, "source": "rule"})
    # a relabel of v1's first run: the map shows the newest, the aggregate counts the scores stored
    batch.append({"name": "helpfulness", "value": 0.9, "trace_id": v1[0].trace_id, "source": "human", "author": "b",
                  "created_at": "2100-01-01T00:00:00Z"})
    assert post_scores(base, batch).status_code == 200
    assert srv.store.wait_loaded(10)

    window = {"since": (T0 - DAY).isoformat(), "until": (T0 + 3 * DAY).isoformat(), "limit": 100}
    rows = {r["trace_id"]: r for r in httpx.get(base + "/api/runs", params=window).json()["runs"]}
    assert rows[v1[0].trace_id]["scores"] == {"correct": True, "helpfulness": 0.9}
    assert rows[v1[2].trace_id]["scores"] == {"correct": False, "helpfulness": 0.25}
    assert rows[v2[1].trace_id]["scores"] == {"tone": "rude"}

    trace = httpx.get(f"{base}/api/traces/{v1[0].trace_id}").json()
    assert trace["run"]["scores"] == {"correct": True, "helpfulness": 0.9}
    assert sorted((s["name"], s["author"], s["value"]) for s in trace["scores"]) == [
        ("correct", None, True), ("helpfulness", "a", 0.5), ("helpfulness", "b", 0.9)]
    assert all(s["agent"] == "ticket" and s["version"] == "1" for s in trace["scores"])

    overview = httpx.get(base + "/api/overview", params={k: v for k, v in window.items() if k != "limit"}).json()
    got = {(a["name"], a["version"]): a for a in overview["scores"]}
    assert set(got) == {("correct", "1"), ("helpfulness", "1"), ("tone", "2")}
    assert got[("correct", "1")]["n"] == 4
    assert got[("correct", "1")]["share_true"] == sum(correct_v1) / 4
    assert got[("helpfulness", "1")]["n"] == 5
    assert abs(got[("helpfulness", "1")]["mean"] - (sum(helpful_v1) + 0.9) / 5) < 1e-12
    assert got[("tone", "2")]["labels"] == {"polite": 2, "rude": 1}
    assert got[("tone", "2")]["mean"] is None and got[("tone", "2")]["share_true"] is None
    assert got[("correct", "1")]["day"].startswith(T0.date().isoformat())
    assert got[("tone", "2")]["day"].startswith((T0 + DAY).date().isoformat())

    # the common filters scope the aggregates: one version, another range, eval runs only
    only_v2 = httpx.get(base + "/api/overview", params={"since": window["since"], "until": window["until"],
                                                        "version": "2"}).json()
    assert {a["name"] for a in only_v2["scores"]} == {"tone"}
    later = httpx.get(base + "/api/overview", params={"since": (T0 + DAY).isoformat(),
                                                      "until": window["until"]}).json()
    assert {a["name"] for a in later["scores"]} == {"tone"}
    evals = httpx.get(base + "/api/overview", params={"since": window["since"], "until": window["until"],
                                                      "mode": "eval"}).json()
    assert evals["scores"] == []
