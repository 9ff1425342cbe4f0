"""`format=csv` answers text/csv with a header row and the same rows and numbers as the JSON; every
documented grouping works; an unknown grouping is a 422, not a 500."""

from __future__ import annotations

import csv
import io

import pytest

from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0


@pytest.fixture
def loaded(server):
    emitter = RunEmitter()
    for i, (agent, cost) in enumerate([("alpha", 0.25), ("alpha", 0.5), ("beta", 1.0)]):
        emitter.run(
            Run(agent=agent, start=T0.replace(day=1 + i),
                steps=[Step(chats=[Chat(cost=cost)], tools=[Tool("search", {"q": i}, "r", cost=0.01)]), Step()])
        )  # fmt: skip
    server.send(emitter.request())


@pytest.mark.parametrize("backend", BACKENDS)
def test_csv_has_a_header_and_the_json_rows(server, loaded):
    r = server.get("/api/cost", group_by="agent", format="csv")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    as_json = server.get("/api/cost", group_by="agent").json()["rows"]
    assert [row["key"] for row in rows] == [row["key"] for row in as_json] == ["beta", "alpha"]
    for row, j in zip(rows, as_json, strict=True):
        assert int(row["runs"]) == j["runs"] and int(row["llm_calls"]) == j["llm_calls"]
        assert float(row["cost_usd"]) == pytest.approx(j["cost_usd"])
        assert row["examples"].split() == j["examples"]
    assert float(rows[1]["cost_usd"]) == pytest.approx(0.25 + 0.5 + 0.02)


@pytest.mark.parametrize("group_by", ["model", "provider", "tool", "agent", "version", "project", "user", "conversation", "day"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_grouping_answers(server, loaded, group_by):
    body = server.get("/api/cost", group_by=group_by).json()
    assert body["group_by"] == group_by and body["rows"]
    assert body["total_cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in body["rows"]))
    if group_by == "day":
        assert [r["key"] for r in body["rows"]] == ["2025-03-03", "2025-03-02", "2025-03-01"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_unknown_grouping_is_422(server, loaded):
    assert server.get("/api/cost", group_by="colour").status_code == 422
    assert server.get("/api/cost", format="xml").status_code == 422
