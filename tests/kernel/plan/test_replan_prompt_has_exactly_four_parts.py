"""The replan prompt for a fixed case, asserted exactly: the goal, one line per completed step with
a capped output summary, the structured failure signal (with the lessons), the remaining plan.
No observation text beyond that summary, no error observation, no earlier replan transcript."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from kernel.plan.prompts import REPLAN_FORMAT, REPLANNER_SYSTEM
from tests.kernel.plan.toolkit import LONG_TAIL, World, plan_json, step

EXPECTED_USER = """\
## Goal
How much did ghost spend?

## Completed steps
E1 big_page: run big_page -> HEAD lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lo…

## Failure
{
 "failed_step": "E2",
 "tool": "get_orders",
 "kind": "semantic",
 "message": "ValueError: no customer named 'ghost'",
 "recovery_attempted": [],
 "evidence": {
  "error": "exception"
 },
 "granularity": "patch",
 "replace": [
  "E2",
  "E3"
 ],
 "lessons": [
  "get_orders (run get_orders) failed: semantic: ValueError: no customer named 'ghost'"
 ]
}

## Remaining plan
E2 [replace] get_orders({"customer": "ghost"}): run get_orders
E3 [replace] sum_totals({"rows": "#E2.rows"}): run sum_totals
E4 report({"customer": "#E1", "total": "#E3.total"}): run report"""

FIRST_REPLAN = plan_json(step("g", "get_orders", {"customer": "ghost-2"}), step("s", "sum_totals", {"rows": "#g.rows"}),
                         cause="CAUSE-OF-REPLAN-ONE")


async def test_the_replan_prompt_exactly() -> None:
    world = World()
    registry = world.registry()
    llm = ScriptedLLM([
        plan_json(step("E1", "big_page", {"url": "https://example.test/ghost"}),
                  step("E2", "get_orders", {"customer": "ghost"}), step("E3", "sum_totals", {"rows": "#E2.rows"}),
                  step("E4", "report", {"total": "#E3.total", "customer": "#E1"})),
        FIRST_REPLAN,
        "no more ideas",
    ])
    agent = PlanAndExecuteAgent("pe", "1", llm, registry, max_plan_attempts=1)
    await agent.run("How much did ghost spend?")

    first = llm.calls[1].messages
    assert [m.role for m in first] == ["system", "user"]
    assert first[0].content == (
        f"{REPLANNER_SYSTEM}\n\nAvailable tools:\n{registry.as_prompt_text()}\n\n{REPLAN_FORMAT}"
    )
    assert first[1].content == EXPECTED_USER
    assert [line for line in EXPECTED_USER.splitlines() if line.startswith("## ")] == [
        "## Goal", "## Completed steps", "## Failure", "## Remaining plan"]

    # The second replan: still four parts, still no observation text, no trace of the first
    # replan's conversation, only the lesson book growing.
    second = llm.calls[2].messages[1].content
    assert [line for line in second.splitlines() if line.startswith("## ")] == [
        "## Goal", "## Completed steps", "## Failure", "## Remaining plan"]
    assert "CAUSE-OF-REPLAN-ONE" not in second and FIRST_REPLAN not in second
    assert "no customer named 'ghost-2'" in second  # the new failure, in the signal and as a lesson
    assert '"granularity": "tail"' in second
    for call in llm.calls[1:]:
        text = "\n".join(m.content or "" for m in call.messages)
        assert LONG_TAIL not in text
        assert "TOOL_ERROR" not in text
        assert "lorem ipsum " * 10 not in text
