"""The Overview page shows each agent version's hand-off rate (with the reasons) and the budget
advice panel (P95 x 1.5 and what the current limit cuts), from real kernel runs sent over OTLP to a
real ingest server. The failure this covers: hand-offs and limits stored and served by the API but
invisible on the page a team watches."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracer
from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from tests.dashboards.conftest import open_page
from tests.ingest.api.harness import BACKENDS
from tests.support.scripted_runs import act, add, final

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def test_overview_handoff_table_and_budget_advice(start_ingest_server, ui_env) -> None:
    server = start_ingest_server(grpc_port=0)
    handle = tracer.setup(service_name="overview-handoffs", endpoint=f"{server.http_url}/v1/traces",
                          schedule_delay_ms=50)
    policy = HandoffPolicy(escalation_tool="transfer_to_human")
    scripts = [[final("1")], [act("add", a=1, b=1), final("2")], [act("transfer_to_human", reason="asks for a person")],
               [act("add", a=1, b=1), act("add", a=2, b=1), act("add", a=3, b=1)]]
    try:
        results = [Agent("desk", "3", ScriptedLLM(s), [add], budget=Budget(max_steps=3), handoff=policy).run_sync("t")
                   for s in scripts]
    finally:
        assert handle.shutdown(10)
    assert [r.stop_reason for r in results] == ["finish", "finish", "handoff", "max_steps"]
    assert server.store.wait_loaded(30)

    ui_env(server.http_url)
    at = open_page("overview", {"since": "all"})
    assert not at.exception, at.exception
    headings = [s.value for s in at.subheader]
    assert headings.index("Latest failed runs") < headings.index("Hand-offs to a human") < headings.index("Budget advice")
    handoffs = next(df.value for df in at.dataframe if "hand-off rate" in df.value.columns)
    assert list(handoffs["version"]) == ["3"]
    assert (int(handoffs["runs"][0]), int(handoffs["handed off"][0])) == (4, 2)
    assert handoffs["hand-off rate"][0] == "50.0%"
    assert set(handoffs["reasons"][0].split(", ")) == {"escalation 1", "max_steps 1"}

    advice = next(df.value for df in at.dataframe if "suggested" in df.value.columns)
    steps = advice[advice["limit"] == "max_steps"].iloc[0]
    used = [len(r.steps) for r in results]
    assert used == [1, 2, 1, 3]
    assert steps["suggested"] == math.ceil(float(np.quantile(used, 0.95)) * 1.5)
    assert (steps["current"], steps["current from"]) == (3, "recorded")
    assert (steps["runs it would cut"], steps["runs it ended"]) == (0, 1)
