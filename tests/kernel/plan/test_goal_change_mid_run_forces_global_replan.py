"""A caller injecting a new instruction mid-run gets a global replan toward it: everything done
so far becomes stale (not void), the replan prompt's goal carries the change, and the run
answers the new goal."""

from __future__ import annotations

import pytest

from kernel.llm import ScriptedLLM
from kernel.plan import GoalInbox, PlanAndExecuteAgent, VariableHealth
from tests.kernel.plan.toolkit import World, plan_json, step


async def test_goal_change_mid_run() -> None:
    world = World()
    world.change_goal_to = "Report X's price instead."  # injected while E2 (report) runs
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "acme"}), step("E2", "report", {"total": 42}),
                  step("E3", "sum_totals", {"rows": "#E1.rows"}), answer="#E3.total"),
        plan_json(step("p", "quote", {"symbol": "X"}), answer="X costs #p.price", cause="goal changed"),
    ])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry())
    result = await agent.run("acme's spend", inbox=world.inbox)
    assert result.ok, result.error
    assert result.goal_changes == ["Report X's price instead."]
    [rep] = result.replans
    assert (rep.granularity, rep.cause, rep.failed_step) == ("global", "goal_change", None)
    assert result.answer == "X costs 10"
    assert world.called("sum_totals") == 0  # the old plan's remaining step never ran
    assert {c.step_id: c.health for c in result.completed} == {
        "E1": VariableHealth.STALE, "E2": VariableHealth.STALE, "E4": VariableHealth.CLEAN}
    goal_part = llm.calls[1].messages[1].content.split("\n\n## Completed steps")[0]
    assert goal_part == "## Goal\nacme's spend\nGoal changed mid-run: Report X's price instead."
    assert result.failures == []  # a goal change is not a failure


def test_an_empty_instruction_is_refused() -> None:
    with pytest.raises(ValueError):
        GoalInbox().change("  ")
