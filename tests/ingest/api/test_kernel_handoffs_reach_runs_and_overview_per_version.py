"""Real kernel runs handed to a human (the step limit, the model's escalation tool) exported over
OTLP/HTTP to a real ingest server: the run span carries `steplens.run.handoff.*`, the runs rows say
why and to whom, and /api/overview gives the exact hand-off rate per agent version."""

from __future__ import annotations

import httpx
import pytest

import tracer
from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import rows
from tests.support.scripted_runs import act, add, final
from tracer import conventions as c
from tracer.conventions import HandoffReason, StopReason

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

POLICY = HandoffPolicy(target="tier-2", escalation_tool="transfer_to_human")


def _agent(version: str, replies: list[str], max_steps: int = 5) -> Agent:
    return Agent("desk", version, ScriptedLLM(replies), [add], budget=Budget(max_steps=max_steps), handoff=POLICY)


async def test_handoffs_reach_run_rows_and_the_overview_rate(ingest_server) -> None:
    handle = tracer.setup(service_name="handoff-tests", endpoint=f"{ingest_server.http_url}/v1/traces",
                          schedule_delay_ms=50)
    try:
        results = {
            "v1 finish": await _agent("1", [final("3")]).run("t"),
            "v1 escalation": await _agent("1", [act("transfer_to_human", reason="wants a person")]).run("t"),
            "v2 finish a": await _agent("2", [final("3")]).run("t"),
            "v2 finish b": await _agent("2", [act("add", a=1, b=2), final("3")]).run("t"),
            "v2 finish c": await _agent("2", [final("4")]).run("t"),
            "v2 max_steps": await _agent("2", [act("add", a=1, b=2)], max_steps=1).run("t"),
        }
    finally:
        assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
    assert results["v1 escalation"].stop_reason == StopReason.HANDOFF
    assert results["v2 max_steps"].stop_reason == StopReason.MAX_STEPS
    assert ingest_server.store.wait_loaded(30)

    with httpx.Client(base_url=ingest_server.http_url, timeout=30) as client:
        runs = client.get("/api/runs", params={"agent": "desk", "limit": 50}).raise_for_status().json()["runs"]
        overview = client.get("/api/overview", params={"agent": "desk"}).raise_for_status().json()
        trace = client.get(f"/api/traces/{results['v1 escalation'].trace_id}").raise_for_status().json()

    by_trace = {r["trace_id"]: r for r in runs}
    assert len(by_trace) == 6
    for label, result in results.items():
        row = by_trace[result.trace_id]
        if label == "v1 escalation":
            assert (row["handoff_reason"], row["handoff_target"]) == (HandoffReason.ESCALATION.value, "tier-2")
            assert row["stop_reason"] == StopReason.HANDOFF.value and row["ok"] is False
        elif label == "v2 max_steps":
            assert (row["handoff_reason"], row["handoff_target"]) == (HandoffReason.MAX_STEPS.value, "tier-2")
        else:
            assert (row["handoff_reason"], row["handoff_target"]) == (None, None), label

    [root] = [s for s in trace["spans"] if s["span_id"] == trace["run"]["root_span_id"]]
    assert root["attributes"][c.RUN_HANDOFF_REASON] == HandoffReason.ESCALATION.value
    assert root["attributes"][c.RUN_HANDOFF_TARGET] == "tier-2"

    assert (overview["totals"]["runs"], overview["totals"]["handoff_runs"]) == (6, 2)
    assert overview["totals"]["handoff_rate"] == pytest.approx(2 / 6)
    rates = {(h["agent"], h["version"]): h for h in overview["handoffs"]}
    assert set(rates) == {("desk", "1"), ("desk", "2")}
    assert (rates["desk", "1"]["runs"], rates["desk", "1"]["handoff_runs"]) == (2, 1)
    assert rates["desk", "1"]["handoff_rate"] == pytest.approx(0.5)
    assert rates["desk", "1"]["reasons"] == {"escalation": 1}
    assert (rates["desk", "2"]["runs"], rates["desk", "2"]["handoff_runs"]) == (4, 1)
    assert rates["desk", "2"]["handoff_rate"] == pytest.approx(0.25)
    assert rates["desk", "2"]["reasons"] == {"max_steps": 1}
    assert [h["version"] for h in overview["handoffs"]] == ["2", "1"]  # most runs first
    assert sum(b["handoff_runs"] for b in overview["series"]) == 2
    sql = ("SELECT version, handoff_reason, handoff_target, count(*) FROM runs WHERE agent = 'desk' "
           "GROUP BY ALL ORDER BY version, handoff_reason NULLS FIRST")
    assert rows(ingest_server.http_url, sql) == [["1", None, None, 1], ["1", "escalation", "tier-2", 1],
                                                 ["2", None, None, 3], ["2", "max_steps", "tier-2", 1]]
