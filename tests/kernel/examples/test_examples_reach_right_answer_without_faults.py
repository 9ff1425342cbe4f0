"""With a flawless simulated model every example agent, in every version, reaches the right answer
for every kind of task: the policies are correct, so every wrong answer in the demo is a fault's."""

from __future__ import annotations

import random

import pytest

from kernel.examples import AGENTS, FaultRates, build_agent
from tracer.conventions import StepKind, StopReason


def _tasks(agent: str, per_kind: int = 3) -> list:
    """The first `per_kind` sampled tasks of each kind (deterministic)."""
    rng, out = random.Random(f"right-answer:{agent}"), []
    for _ in range(300):
        task = AGENTS[agent].sample_task(rng)
        if sum(t.kind == task.kind for t in out) < per_kind:
            out.append(task)
    return out


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("agent", ["ticket", "ops"])
async def test_no_fault_runs_finish_with_the_expected_facts(agent: str, version: str) -> None:
    tasks = _tasks(agent)
    kinds = {t.kind for t in tasks}
    assert kinds == ({"where_is", "refund", "unknown_order", "legal_threat"} if agent == "ticket" else {"incident"})
    for i, task in enumerate(tasks):
        built = build_agent(agent, version, seed=i, faults=FaultRates.none())
        result = await built.agent.run(task.text)
        assert result.ok and result.stop_reason == StopReason.FINISH, (task, result.error)
        for fact in task.expect:
            assert fact in result.answer, (task.text, fact, result.answer)
        assert sum(built.models[0].injected.values()) == 0
        assert result.steps[-1].kind == StepKind.FINISH
        assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0 and not result.usage.estimated
        assert result.cost_usd > 0 and result.unpriced_models == []  # real model names, priced


async def test_ticket_agent_acts_through_its_side_effect_tools() -> None:
    """A resolved "where is" ticket is closed with resolve_ticket; an unknown order is answered
    without inventing a status (the NotFound error is read, not ignored)."""
    built = build_agent("ticket", "v1", seed=1, faults=FaultRates.none())
    result = await built.agent.run("Ticket T-5555: Where's my package for order A4242??")
    assert result.ok and "could not find" in result.answer and "A4242" in result.answer
    names = [c.name for s in result.steps for c in s.calls]
    assert names == ["query_order", "resolve_ticket"]
    error = result.steps[0].observations[0]
    assert error.is_error and "not_found" in error.content and "A4242" in error.content


async def test_ops_answer_needs_the_gateway_logs() -> None:
    built = build_agent("ops", "v1", seed=3, faults=FaultRates.none())
    result = await built.agent.run("Alert: checkout p99 latency above 2 s since 14:05 UTC. Find the root cause.")
    calls = [(c.name, c.arguments) for s in result.steps for c in s.calls]
    assert ("search_logs", {"service": "gateway", "query": "error timeout pool"}) in calls
    assert calls[-1] == ("read_repo_file", {"path": "deploy/gateway/config.yaml"})
    assert result.ok and "connection pool" in result.answer and "100 to 10" in result.answer
