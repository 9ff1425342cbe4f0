"""The plan-and-execute agent (the demo's planner) dispatches its steps through its own executor,
which waits for a human on a high-risk step. Its shadow must neither act (a refund that writes a
real ledger file is recorded, not made) nor ask anyone to approve a refund it will never make:
the approvals backend stays empty, while the same agent run live does ask. The failure this
covers: a candidate in shadow filling the reviewers' queue or paying refunds twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kernel.approvals import ApprovalPolicy, ApprovalStatus, InMemoryApprovals
from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.release import Release
from kernel.tools import tool
from tests.kernel.plan.toolkit import plan_json, step
from tracer.conventions import RiskLevel, ToolDecision


def _refund_tool(ledger: Path):  # type: ignore[no-untyped-def]
    @tool(side_effect=True, risk=RiskLevel.HIGH, description="Refund an order.")
    async def refund(order_id: str) -> dict:
        with ledger.open("a") as f:
            f.write(f"refund {order_id}\n")
        return {"refund_id": f"R-{order_id}"}

    return refund


def _planner(version: str, ledger: Path, approvals: InMemoryApprovals, wait_s: float = 5.0) -> PlanAndExecuteAgent:
    plan = plan_json(step("E1", "refund", {"order_id": "A1"}, on_failure="after_the_fact"), answer="#E1.refund_id")
    llm = ScriptedLLM([plan, "The refund was not made."] * 2)
    policy = ApprovalPolicy(approvals, wait_s=wait_s, poll_interval_s=0.02)
    return PlanAndExecuteAgent("refunds", version, llm, [_refund_tool(ledger)], policy=policy)


async def test_the_shadow_plan_records_the_refund_and_no_one_is_asked(tmp_path: Path) -> None:
    ledger, approvals = tmp_path / "ledger.txt", InMemoryApprovals()
    stable = PlanAndExecuteAgent("refunds", "1", ScriptedLLM(["Nothing to refund."] * 2), [])
    candidate = _planner("2", ledger, approvals)
    release = Release("refunds-2", stable, candidate, share=0.0, shadow=candidate)

    live = await asyncio.wait_for(release.run("refund order A1", user_id="u1"), 10)
    [mirror] = await release.drain(10)

    assert live.version == "1"  # the user was served by stable
    assert not ledger.exists()  # no refund was made
    assert approvals.list() == []  # and nobody was asked to approve one
    assert [c.name for c in mirror.blocked_calls] == ["refund"]
    assert mirror.blocked_calls[0].arguments == {"order_id": "A1"}
    decisions = [o.decision for r in mirror.result.steps for o in r.observations]
    assert ToolDecision.SHADOWED in decisions and ToolDecision.EXECUTED not in decisions

    # the same agent run live does ask a reviewer (who is not there: nothing is refunded either)
    asking = _planner("2", ledger, approvals, wait_s=0.2)
    await asyncio.wait_for(asking.run("refund order A1"), 10)
    [asked] = approvals.list()
    assert asked.tool == "refund" and asked.status == ApprovalStatus.EXPIRED
    assert not ledger.exists()
