"""ReWOO-style steps (`on_failure: after_the_fact`): a failure is recorded, steps that needed it
are skipped, execution goes on without any replan, and the solver answers from the evidence with
the missing evidence named plainly, by the solver or, if it glossed over it, by the kernel."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import FailureKind, PlanAndExecuteAgent
from kernel.plan.prompts import SOLVER_SYSTEM
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import StepKind

ATF = "after_the_fact"


def _plan() -> str:
    return plan_json(
        step("E1", "get_orders", {"customer": "ghost"}, on_failure=ATF),
        step("E2", "sum_totals", {"rows": "#E1.rows"}, on_failure=ATF),
        step("E3", "quote", {"symbol": "X"}, on_failure=ATF),
        answer="#E2.total",  # not fillable: the solver answers instead
    )


async def test_gap_is_stated_even_when_the_solver_does_not() -> None:
    world = World()
    llm = ScriptedLLM([_plan(), "X trades at 10."])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("ghost's spend and X's price")
    assert result.ok, result.error
    assert result.replans == [] and len(llm.calls) == 2
    assert [f.kind for f in result.failures] == [FailureKind.SEMANTIC]
    assert result.answer.startswith("X trades at 10.\n\nMissing evidence:\n")
    assert "E1 get_orders: run get_orders -> MISSING (semantic: ValueError: no customer named 'ghost')" in result.answer
    assert "E2 sum_totals: run sum_totals -> MISSING (needs E1, which produced no result)" in result.answer
    assert result.missing_evidence == result.answer.split("Missing evidence:\n")[1].split("\n")
    assert world.called("sum_totals") == 0  # skipped, never called with a hole in its input
    # the solver saw the evidence and the gap, and no raw error observation
    system, user = llm.calls[1].messages
    assert system.content == SOLVER_SYSTEM
    assert user.content == (
        "## Goal\nghost's spend and X's price\n\n"
        "## Evidence\nE3 quote: run quote -> {\"price\": 10}\n\n"
        "## Missing evidence\n" + "\n".join(result.missing_evidence)
    )
    assert "TOOL_ERROR" not in user.content
    finish = result.steps[-1]
    assert finish.kind == StepKind.FINISH and finish.answer == result.answer


async def test_a_solver_that_names_the_gap_is_left_alone() -> None:
    llm = ScriptedLLM([_plan(), "X trades at 10. E1 and E2 are missing, so ghost's spend is unknown."])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("ghost's spend and X's price")
    assert result.ok
    assert result.answer == "X trades at 10. E1 and E2 are missing, so ghost's spend is unknown."
    assert len(result.missing_evidence) == 2
