"""The demo drew v1 and v2 at random run by run, so which version was "released first" (first run
seen) was a coin toss and a default release comparison could read the planted v2 regression as a
v1 one. Every agent's v1 runs now start before its v2 runs; the runs themselves do not change."""

from __future__ import annotations

from kernel.examples.demo import plan_run, release_order


def test_every_v1_run_starts_before_any_v2_run_of_the_same_agent() -> None:
    order = release_order(400, seed=5)
    assert sorted(order) == list(range(400))  # every run exactly once
    position = {index: pos for pos, index in enumerate(order)}
    plans = [plan_run(5, i) for i in range(400)]
    for agent in {p.agent for p in plans}:
        v1 = [position[p.index] for p in plans if p.agent == agent and p.version == "v1"]
        v2 = [position[p.index] for p in plans if p.agent == agent and p.version == "v2"]
        assert v1 and v2 and max(v1) < min(v2), agent


def test_order_does_not_change_what_each_run_is() -> None:
    assert [plan_run(1, i) for i in release_order(50, seed=1)] == sorted(
        (plan_run(1, i) for i in range(50)), key=lambda p: (p.version, p.index))
