"""Loop-guard refusals reach the store as guard events on their step spans, never as tool calls:
a real traced run (a refused identical repeat, a refused same-tool streak, and one real policy
denial for comparison) exported over OTLP/HTTP to a real ingest server. `/api/tools` and the run
count only the dispatched calls; the real denial is still a denial; the trace shows the refusals
as `steplens.loop_guard` events with their rule."""

from __future__ import annotations

import httpx
import pytest

import tracer
from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.loop_guard import LoopGuard
from kernel.policy import DenyAll
from kernel.tools import tool
from tests.ingest.api.harness import BACKENDS
from tests.support.scripted_runs import act, add, final
from tracer import conventions as c
from tracer.conventions import GuardRule, StepKind

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


@tool(side_effect=True)
async def send_email(to: str) -> str:
    """Sends an email (never runs here: the policy denies it)."""
    return f"sent to {to}"


async def test_guard_refusals_do_not_count_as_tool_calls_errors_or_denials(ingest_server) -> None:
    handle = tracer.setup(service_name="guard-tests", endpoint=f"{ingest_server.http_url}/v1/traces",
                          schedule_delay_ms=50)
    try:
        llm = ScriptedLLM([act("add", a=1, b=2), act("add", a=1, b=2), act("add", a=2, b=2),
                           act("add", a=3, b=3), act("send_email", to="x@example.com"), final("done")])
        agent = Agent("guarded", "1", llm, [add, send_email], policy=DenyAll(),
                      loop_guard=LoopGuard(window=3, max_same_tool_in_a_row=2))
        result = await agent.run("t")
    finally:
        assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
    assert result.ok
    kinds = [s.kind for s in result.steps]
    assert kinds == [StepKind.TOOL, StepKind.LOOP_GUARD, StepKind.TOOL, StepKind.LOOP_GUARD, StepKind.TOOL,
                     StepKind.FINISH]
    rules = [e.rule for s in result.steps for e in s.guard_events]
    assert rules == [GuardRule.REPEATED_CALL, GuardRule.SAME_TOOL_STREAK]
    assert ingest_server.store.wait_loaded(30)

    with httpx.Client(base_url=ingest_server.http_url, timeout=30) as client:
        tools = {t["tool"]: t for t in client.get("/api/tools", params={"agent": "guarded"}).json()["tools"]}
        trace = client.get(f"/api/traces/{result.trace_id}").raise_for_status().json()
    assert (tools["add"]["calls"], tools["add"]["errors"], tools["add"]["denials"]) == (2, 0, 0)
    assert tools["add"]["error_rate"] == 0
    assert (tools["send_email"]["calls"], tools["send_email"]["denials"]) == (1, 1)  # a real denial still is
    run = trace["run"]
    assert (run["tool_calls"], run["tool_errors"], run["steps"]) == (3, 1, 6)
    names = [s["name"] for s in trace["spans"]]
    assert names.count("execute_tool add") == 2
    guarded = {s["name"]: s for s in trace["spans"] if s["name"] in ("step 2", "step 4")}
    for name, rule in (("step 2", GuardRule.REPEATED_CALL), ("step 4", GuardRule.SAME_TOOL_STREAK)):
        [event] = guarded[name]["events"]
        assert event["name"] == c.EVENT_LOOP_GUARD
        assert event["attributes"][c.GUARD_RULE] == rule.value
        assert event["attributes"][c.GEN_AI_TOOL_NAME] == "add"
