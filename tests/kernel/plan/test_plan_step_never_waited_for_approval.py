"""A high-risk step of a plan became `pending_approval` and failed at once as a permission error:
the plan-and-execute executor never waited for the reviewer the ReAct loop waits for. Now the
step waits (bounded by the policy's wait), runs when approved, and is a clear failure when
nobody decides; the spans show `pending_approval` then `executed`, and the step `approval_wait`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import tracer
from kernel.approvals import ApprovalPolicy, ApprovalStatus, InMemoryApprovals
from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.tools import tool
from tests.kernel.plan.toolkit import plan_json, step
from tracer import conventions as c
from tracer.conventions import RiskLevel, StepKind
from tracer.provider import TracingHandle

REFUNDS: list[str] = []


@tool(side_effect=True, risk=RiskLevel.HIGH, description="Refund an order.")
async def refund(order_id: str) -> dict:
    REFUNDS.append(order_id)
    return {"refund_id": f"R-{order_id}"}


@pytest.fixture
def memory() -> Iterator[TracingHandle]:
    handle = tracer.setup(service_name="plan-tests", endpoint="memory")
    try:
        yield handle
    finally:
        handle.shutdown(timeout_s=2.0)


async def _approve_when_asked(backend: InMemoryApprovals) -> None:
    while not backend.list(ApprovalStatus.PENDING):
        await asyncio.sleep(0.01)
    [pending] = backend.list(ApprovalStatus.PENDING)
    backend.approve(pending.approval_id, "checked the order", by="alice")


async def test_approved_step_runs_after_the_wait(memory: TracingHandle) -> None:
    REFUNDS.clear()
    backend = InMemoryApprovals()
    policy = ApprovalPolicy(backend, wait_s=10, poll_interval_s=0.02)
    llm = ScriptedLLM([plan_json(step("E1", "refund", {"order_id": "A1"}), answer="#E1.refund_id")])
    agent = PlanAndExecuteAgent("pe", "1", llm, [refund], policy=policy)
    reviewer = asyncio.create_task(_approve_when_asked(backend))
    result = await asyncio.wait_for(agent.run("refund A1"), 10)
    await reviewer
    assert result.ok, result.error
    assert result.answer == "R-A1"
    assert REFUNDS == ["A1"]
    [record] = [r for r in result.steps if r.plan_step_id == "E1"]
    assert record.kind == StepKind.APPROVAL_WAIT
    spans = memory.memory_exporter.get_finished_spans()
    tools = sorted((s for s in spans if s.name == "execute_tool refund"), key=lambda s: s.start_time)
    assert [s.attributes[c.TOOL_DECISION] for s in tools] == ["pending_approval", "executed"]
    [step_span] = [s for s in spans if s.attributes.get(c.PLAN_STEP_ID) == "E1"]
    assert step_span.attributes[c.STEP_KIND] == "approval_wait"


async def test_nobody_deciding_is_a_clear_gap_and_nothing_runs() -> None:
    REFUNDS.clear()
    backend = InMemoryApprovals()
    policy = ApprovalPolicy(backend, wait_s=0.2, poll_interval_s=0.05)
    llm = ScriptedLLM([
        plan_json(step("E1", "refund", {"order_id": "A2"}, on_failure="after_the_fact"), answer="#E1.refund_id"),
        "The refund could not be made.",
    ])
    agent = PlanAndExecuteAgent("pe", "1", llm, [refund], policy=policy)
    result = await asyncio.wait_for(agent.run("refund A2"), 10)
    assert REFUNDS == []
    [approval] = backend.list()
    assert approval.status == ApprovalStatus.EXPIRED
    [signal] = result.failures
    assert signal.kind.value == "permission"
    assert result.ok and "E1 refund" in result.answer and "MISSING" in result.answer
    [record] = [r for r in result.steps if r.plan_step_id == "E1"]
    assert record.kind == StepKind.APPROVAL_WAIT
    assert "NOT executed" in (record.observation_text or "")
