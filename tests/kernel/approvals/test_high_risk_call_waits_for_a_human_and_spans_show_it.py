"""A high-risk side-effect call becomes a pending approval; the run waits (bounded) and then runs the
call (approved), refuses it (rejected), or ends the wait with a clear observation (nobody decided).
Spans: `execute_tool` with decision pending_approval, then executed/denied; step kind approval_wait."""

from __future__ import annotations

import asyncio
import threading

from kernel.approvals import ApprovalPolicy, ApprovalStatus, InMemoryApprovals
from kernel.dispatch import NOT_EXECUTED_PREFIX
from kernel.policy import Shadow
from tests.kernel.approvals._helpers import LEDGER, agent, by_name, captured
from tracer import conventions as c
from tracer.conventions import StepKind, ToolDecision


def _decide_when_pending(queue: InMemoryApprovals, approve: bool, reason: str) -> threading.Thread:
    """A reviewer on another thread: waits for the pending approval, then decides."""

    def reviewer() -> None:
        for _ in range(400):
            pending = queue.list(ApprovalStatus.PENDING)
            if pending:
                (queue.approve if approve else queue.reject)(pending[0].approval_id, reason, by="ana")
                return
            threading.Event().wait(0.01)

    thread = threading.Thread(target=reviewer)
    thread.start()
    return thread


async def test_approved_call_runs_after_the_wait() -> None:
    LEDGER.clear()
    queue = InMemoryApprovals()
    policy = ApprovalPolicy(queue, wait_s=5, poll_interval_s=0.01)
    reviewer = _decide_when_pending(queue, approve=True, reason="customer is right")
    with captured() as exporter:
        result = await agent(policy).run("refund A1")
    reviewer.join()
    assert result.ok and LEDGER == [{"order_id": "A1", "amount_usd": 500.0}]
    step = result.steps[0]
    assert step.kind == StepKind.APPROVAL_WAIT
    assert step.observations[0].decision == ToolDecision.EXECUTED and "R-A1" in step.observations[0].content
    [approval] = queue.list()
    assert approval.status == ApprovalStatus.APPROVED and approval.decided_by == "ana"

    spans = exporter.get_finished_spans()
    tools = by_name(spans, "execute_tool refund")
    assert [t.attributes[c.TOOL_DECISION] for t in tools] == ["pending_approval", "executed"]
    assert approval.trace_id == format(tools[0].context.trace_id, "032x")  # the reviewer can open the run
    [step_span] = [s for s in by_name(spans, "step ") if s.attributes[c.STEP_INDEX] == 1]
    assert step_span.attributes[c.STEP_KIND] == "approval_wait"


async def test_rejected_call_is_denied_with_the_reviewers_reason() -> None:
    LEDGER.clear()
    queue = InMemoryApprovals()
    policy = ApprovalPolicy(queue, wait_s=5, poll_interval_s=0.01)
    reviewer = _decide_when_pending(queue, approve=False, reason="over the limit")
    with captured() as exporter:
        result = await agent(policy).run("refund A1")
    reviewer.join()
    assert LEDGER == []
    obs = result.steps[0].observations[0]
    assert obs.is_error and obs.decision == ToolDecision.DENIED and "over the limit" in obs.content
    tools = by_name(exporter.get_finished_spans(), "execute_tool refund")
    assert [t.attributes[c.TOOL_DECISION] for t in tools] == ["pending_approval", "denied"]
    assert tools[1].attributes["error.type"] == "denied"


async def test_nobody_decides_the_wait_ends_with_a_clear_observation_and_the_approval_expires() -> None:
    LEDGER.clear()
    queue = InMemoryApprovals()
    policy = ApprovalPolicy(queue, wait_s=0.2, poll_interval_s=0.02)
    started = asyncio.get_running_loop().time()
    result = await agent(policy).run("refund A1")
    assert asyncio.get_running_loop().time() - started < 3
    assert LEDGER == []
    obs = result.steps[0].observations[0]
    assert obs.decision == ToolDecision.PENDING_APPROVAL and obs.content.startswith(NOT_EXECUTED_PREFIX)
    assert "NOT executed" in obs.content and "0.2 s" in obs.content and obs.approval_id in obs.content
    [approval] = queue.list()
    assert approval.status == ApprovalStatus.EXPIRED
    # too late: a reviewer can no longer approve what the agent gave up on
    try:
        queue.approve(approval.approval_id)
        raise AssertionError("approving an expired approval must fail")
    except Exception as exc:
        assert "already expired" in str(exc)


async def test_the_run_wall_clock_bounds_the_wait() -> None:
    from kernel.budgets import Budget

    queue = InMemoryApprovals()
    run = agent(ApprovalPolicy(queue, wait_s=60, poll_interval_s=0.02))
    run.budget = Budget(max_seconds=0.3)
    result = await run.run("refund A1")
    assert result.stop_reason.value == "timeout" and "approval" in result.error


async def test_low_risk_side_effects_do_not_wait() -> None:
    from kernel import Agent, ScriptedLLM, tool

    @tool(side_effect=True, description="Close the ticket.")
    async def close(ticket: str) -> str:
        return "closed"

    queue = InMemoryApprovals()
    run = Agent("closer", "v1", ScriptedLLM([
        'Thought: x\nAction: close\nAction Input: {"ticket": "T-1"}', "Thought: y\nFinal Answer: ok"]), [close],
        policy=ApprovalPolicy(queue, wait_s=5))
    result = await run.run("close it")
    assert result.ok and result.steps[0].kind == StepKind.TOOL and queue.list() == []


async def test_unreachable_approval_service_denies_the_call() -> None:
    from kernel.approvals import HttpApprovals

    policy = ApprovalPolicy(HttpApprovals("http://127.0.0.1:9", register_attempts=1), wait_s=5)
    LEDGER.clear()
    result = await agent(policy).run("refund A1")
    obs = result.steps[0].observations[0]
    assert obs.decision == ToolDecision.DENIED and "unreachable" in obs.content and LEDGER == []


async def test_shadow_mode_spans_say_shadowed() -> None:
    LEDGER.clear()
    with captured() as exporter:
        result = await agent(Shadow()).run("refund A1")
    assert result.ok and LEDGER == []
    [tool_span] = by_name(exporter.get_finished_spans(), "execute_tool refund")
    assert tool_span.attributes[c.TOOL_DECISION] == "shadowed"
    [run_span] = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert run_span.attributes[c.RUN_MODE] == "shadow"
