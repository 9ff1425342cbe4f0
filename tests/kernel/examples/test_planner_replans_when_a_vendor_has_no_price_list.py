"""The cost-comparison planner: Cobalt has no public price list, so the first plan fails on it and
the run replans to a quote; v2's vague request_quote description costs one more replan (search_web
first). Both reach the right answer with a flawless model; replan spans record it."""

from __future__ import annotations

import random

import pytest

import tracer
from kernel.examples import AGENTS, FaultRates, build_agent
from tracer import conventions as c


async def _run(version: str, seed: int = 0):
    task = AGENTS["planner"].sample_task(random.Random(seed))
    built = build_agent("planner", version, seed=seed, faults=FaultRates.none())
    return task, await built.agent.run(task.text)


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_v1_replans_once_to_a_quote(seed: int) -> None:
    task, result = await _run("v1", seed)
    assert result.ok and all(fact in result.answer for fact in task.expect)
    [replan] = result.replans
    assert (replan.granularity, replan.cause, replan.verdict.value) == ("patch", "semantic:exception", "admitted")
    assert "no_public_price_list" in result.failures[0].message
    tools = [call.name for s in result.steps for call in s.calls]
    assert tools.count("request_quote") == 1 and "search_web" not in tools


async def test_v2_tries_the_web_first_then_quotes() -> None:
    task, v2 = await _run("v2")
    _, v1 = await _run("v1")
    assert v2.ok and all(fact in v2.answer for fact in task.expect)
    assert [r.granularity for r in v2.replans] == ["patch", "tail"]
    assert v2.replans[1].cause == "assumption"  # search_web gave no price
    assert v2.usage.input_tokens > v1.usage.input_tokens and len(v2.steps) > len(v1.steps)


async def test_replan_spans_are_exported() -> None:
    handle = tracer.setup(service_name="planner-test", endpoint="memory")
    try:
        _, result = await _run("v1")
    finally:
        spans = handle.memory_exporter.get_finished_spans()
        handle.shutdown()
    assert result.ok
    [replan] = [s for s in spans if s.name.startswith("replan")]
    assert replan.attributes[c.REPLAN_GRANULARITY] == "patch"
    [run] = [s for s in spans if s.name.startswith("invoke_agent")]
    assert run.attributes[c.RUN_STOP_REASON] == "finish" and run.attributes[c.GEN_AI_AGENT_NAME] == "planner"
