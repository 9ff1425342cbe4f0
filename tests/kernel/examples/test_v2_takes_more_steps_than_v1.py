"""The planted regression: each agent's v2 differs only in one vaguer tool description, and that
alone must make runs longer (the model reads the prompt; nothing checks a version string)."""

from __future__ import annotations

import random

import pytest

from kernel.examples import AGENTS, FaultRates, build_agent

N = 60


async def _mean_steps_and_cost(agent: str, version: str, faults: FaultRates) -> tuple[float, float]:
    rng = random.Random(f"regression:{agent}")  # the same tasks for both versions
    steps, cost = 0, 0.0
    for i in range(N):
        task = AGENTS[agent].sample_task(rng)
        result = await build_agent(agent, version, seed=i, faults=faults).agent.run(task.text)
        steps += len(result.steps)
        cost += result.cost_usd
    return steps / N, cost / N


@pytest.mark.parametrize("faults", [FaultRates.none(), FaultRates()], ids=["flawless", "default-faults"])
@pytest.mark.parametrize("agent", ["ticket", "ops"])
async def test_v2_takes_more_steps_and_costs_more(agent: str, faults: FaultRates) -> None:
    v1_steps, v1_cost = await _mean_steps_and_cost(agent, "v1", faults)
    v2_steps, v2_cost = await _mean_steps_and_cost(agent, "v2", faults)
    # Flawless models show the pure effect (~+0.5 step for ticket, ~+1.5 for ops); faults add noise.
    margin = 0.3 if faults == FaultRates.none() else 0.0
    assert v2_steps > v1_steps + margin, (v1_steps, v2_steps)
    assert v2_cost > v1_cost


def test_versions_differ_only_in_the_documented_description() -> None:
    for agent, changed in (("ticket", "query_logistics"), ("ops", "search_logs")):
        v1 = {t.name: t for t in AGENTS[agent].tools("v1")}
        v2 = {t.name: t for t in AGENTS[agent].tools("v2")}
        assert v1.keys() == v2.keys()
        differing = [n for n in v1 if (v1[n].description, v1[n].parameters) != (v2[n].description, v2[n].parameters)]
        assert differing == [changed]
        assert len(v2[changed].description) < len(v1[changed].description) / 3
