"""Each of the three tool cost parts (direct, decision, carry) equals the hand-computed value.

The run (prices: acme-test input $0.001/token from the test price file):
  step 0: chat $0.30 -> search (own cost $0.05), observation 200 tokens
  step 1: chat $0.10 (failed attempt) + chat $0.20 -> search ($0.05, 100 tokens) and fetch (300 tokens)
  step 2: chat $0.40 -> finish
decision: search 0.30 + 0.30/2 = 0.45; fetch 0.30/2 = 0.15
carry:    search 200 tok x 3 later calls + 100 x 1 = 700 tok = $0.70; fetch 300 x 1 = $0.30
direct:   search 0.05 + 0.05 = 0.10; fetch 0
"""

from __future__ import annotations

import pytest

from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.analytics_server import start_priced_server
from tests.ingest.api.harness import BACKENDS


def the_run() -> Run:
    return Run(
        steps=[
            Step(chats=[Chat(cost=0.30)], tools=[Tool("search", {"q": "a"}, "r0", cost=0.05, observation_tokens=200)]),
            Step(
                chats=[Chat(cost=0.10, error_type="rate_limited"), Chat(cost=0.20)],
                tools=[
                    Tool("search", {"q": "b"}, "r1", cost=0.05, observation_tokens=100),
                    Tool("fetch", {"url": "x"}, "r2", observation_tokens=300, dropped_tokens=50),
                ],
            ),
            Step(chats=[Chat(cost=0.40)]),
        ]
    )


@pytest.fixture(params=BACKENDS)
def server(start_ingest_server, tmp_path, request):
    srv = start_priced_server(start_ingest_server, tmp_path, request.param)
    emitter = RunEmitter()
    emitter.run(the_run())
    srv.send(emitter.request())
    return srv


def test_tools_endpoint_splits_cost_into_direct_decision_and_carry(server):
    r = server.get("/api/tools")
    assert r.status_code == 200, r.text
    tools = {t["tool"]: t for t in r.json()["tools"]}
    assert set(tools) == {"search", "fetch"}
    search, fetch = tools["search"]["cost"], tools["fetch"]["cost"]
    assert search["direct"] == pytest.approx(0.10, abs=0.005)
    assert search["decision"] == pytest.approx(0.45, abs=0.005)
    assert search["carry"] == pytest.approx(0.70, abs=0.005)
    assert search["total"] == pytest.approx(1.25, abs=0.005)
    assert fetch["direct"] == pytest.approx(0.0, abs=0.005)
    assert fetch["decision"] == pytest.approx(0.15, abs=0.005)
    assert fetch["carry"] == pytest.approx(0.30, abs=0.005)
    assert [t["tool"] for t in r.json()["tools"]] == ["search", "fetch"]  # most expensive first
    assert tools["search"]["calls"] == 2 and tools["fetch"]["calls"] == 1
    assert tools["fetch"]["truncation_rate"] == 1.0 and tools["fetch"]["dropped_tokens"] == 50
    assert tools["search"]["truncation_rate"] == 0.0
    assert tools["search"]["carry_tokens"] == 700 and tools["search"]["unpriced_carry_tokens"] == 0
    assert r.json()["price_table"]["as_of"] == "2025-01-01"


def test_cost_by_tool_model_and_agent_agree_with_the_run(server):
    by_tool = server.get("/api/cost", group_by="tool").json()
    rows = {row["key"]: row for row in by_tool["rows"]}
    assert rows["search"]["cost_usd"] == pytest.approx(1.25, abs=0.005)
    assert (rows["search"]["direct"], rows["search"]["decision"], rows["search"]["carry"]) == pytest.approx(
        (0.10, 0.45, 0.70), abs=0.005
    )
    assert rows["fetch"]["cost_usd"] == pytest.approx(0.45, abs=0.005)
    assert by_tool["total_cost_usd"] == pytest.approx(1.70, abs=0.005)

    by_model = server.get("/api/cost", group_by="model").json()
    assert [(r["key"], r["runs"], r["llm_calls"], r["input_tokens"], r["output_tokens"]) for r in by_model["rows"]] == [
        ("acme-test", 1, 4, 400, 40)
    ]
    assert by_model["rows"][0]["cost_usd"] == pytest.approx(1.00, abs=0.005)

    by_agent = server.get("/api/cost", group_by="agent").json()
    assert by_agent["rows"][0]["key"] == "cost_agent"
    assert by_agent["rows"][0]["cost_usd"] == pytest.approx(1.10, abs=0.005)  # LLM calls + the tools' own prices
    assert by_agent["price_table"]["as_of"] == "2025-01-01"


def test_prices_endpoint_shows_the_table_behind_the_numbers(server):
    prices = server.get("/api/prices").json()
    assert prices["as_of"] == "2025-01-01"
    assert any(s.endswith("prices.toml") for s in prices["sources"])
    models = {m["model"]: m for m in prices["models"]}
    assert models["acme-test"]["input_per_mtok"] == 1000.0
